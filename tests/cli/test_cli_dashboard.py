"""``spacy-contextual app``: the command exists, checks its paths, and runs streamlit on the packaged entry."""

import os
import sys

import pytest
from typer.testing import CliRunner

from spacy_contextual.cli import app, dashboard

pytestmark = pytest.mark.integration  # processes, servers, spacy train or a browser


def test_app_command_is_registered():
    result = CliRunner().invoke(app, ["app", "--help"])
    assert result.exit_code == 0
    for option in ("--port", "--elmo-model", "--cove-model", "--pipeline", "--sense-data"):
        assert option in result.output


def test_missing_model_path_is_refused(tmp_path):
    result = CliRunner().invoke(app, ["app", "--elmo-model", str(tmp_path / "missing")], env={"COLUMNS": "400"})
    assert result.exit_code == 1  # a bad parameter value: one line on stderr, like every expected error
    assert result.output.startswith("error: ") and "missing' is not a model name or folder" in result.output


def test_runs_streamlit_on_the_packaged_entry_with_the_models_in_the_environment(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "execve", lambda path, command, env: calls.append((command, env)))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    arguments = [
        "app",
        "--port",
        "8765",
        "--elmo-model",
        str(tmp_path),
        "--pipeline",
        str(tmp_path / "a"),
        "--pipeline",
        str(tmp_path / "b"),
    ]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    ((command, env),) = calls
    assert (
        command[0] == sys.executable
        and command[1:4] == ["-m", "streamlit", "run"]
        and command[4] == str(dashboard.MAIN)
        and dashboard.MAIN.is_file()
    )
    assert command[command.index("--server.port") + 1] == "8765"
    assert env["SPACY_CONTEXTUAL_ELMO_MODEL"] == str(tmp_path.resolve())
    assert env["SPACY_CONTEXTUAL_PIPELINE"] == f"{tmp_path.resolve() / 'a'}{os.pathsep}{tmp_path.resolve() / 'b'}"
