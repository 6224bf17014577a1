"""A command reads its model names first, checks its outputs and options, and only then resolves each
model, once, fetching it if need be (``cli/params.py``): a refused command downloads nothing, which the
loopback server's request count shows. The same name means the same model in every command, with the
same notice when a folder of that name is here."""

from __future__ import annotations

import json
import warnings

import pytest
from model_server import bilm_entry, bilm_tf_files, write_catalog
from util import REPO, assert_one_line_error, cli, writer_leftovers

from spacy_contextual.hub import fetch as fetch_module

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def catalog(tmp_path, home, server):
    """A user catalog whose model "tiny" (a bilm-tf pair) the loopback server serves; nothing cached."""
    return write_catalog(tmp_path / "catalog.json", {"tiny": bilm_entry(server, bilm_tf_files(tmp_path / "bilm"))})


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("The bank .\nthe river bank\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("elmo", "INPUT", "INPUT", "--all"), id="elmo-output-is-input"),
        pytest.param(("elmo", "INPUT", "OUT", "--all", "--batch-size", "0"), id="elmo-batch-size"),
        pytest.param(("elmo", "INPUT", "OUT", "--all", "--precision", "int4"), id="elmo-precision"),
        pytest.param(("elmo", "INPUT", "OUT", "--top", "--average"), id="elmo-two-layer-choices"),
        pytest.param(("elmo", "INPUT", "OUT", "--all", "--errors", "ignore"), id="elmo-errors"),
        pytest.param(("elmo", "INPUT", "OUT", "--all", "--processes", "999"), id="elmo-processes"),
        pytest.param(("sense-probe", "INPUT", "--json", "INPUT"), id="sense-probe-output-is-input"),
        pytest.param(("convert-model", "tiny", "INPUT"), id="convert-model-output-is-a-file-it-reads"),
    ],
)
def test_a_refused_command_downloads_nothing(command, tmp_path, home, server, catalog, text):
    before = text.read_bytes()
    args = [text if a == "INPUT" else tmp_path / "out.hdf5" if a == "OUT" else a for a in command]
    model = [] if "tiny" in args else ["--model", "tiny"]
    assert_one_line_error(cli(*args, *model, "--catalog", catalog))
    assert server.requests == {}  # the server saw no request
    assert not (home / "tiny").exists() and text.read_bytes() == before
    assert writer_leftovers(tmp_path) == [] and not (tmp_path / "out.hdf5").exists()


def test_the_model_is_fetched_once_and_the_command_gets_its_folder(tmp_path, home, server, catalog, text, monkeypatch):
    fetched = []
    original = fetch_module.fetch
    monkeypatch.setattr(fetch_module, "fetch", lambda entry, *a, **k: fetched.append(entry.name) or original(entry))
    result = cli("elmo", text, tmp_path / "out.hdf5", "--all", "--model", "tiny", "--catalog", catalog)
    assert result.exit_code == 0, result.output
    assert fetched == ["tiny"] and server.requests == {"tiny/options.json": 1, "tiny/weights.hdf5": 1}


def test_an_output_inside_a_cached_model_is_refused_before_anything_runs(tmp_path, home, server, catalog, text):
    assert cli("download", "tiny", "--catalog", catalog).exit_code == 0
    weights = home / "tiny" / "weights.hdf5"
    before = weights.read_bytes()
    result = cli("elmo", text, weights, "--all", "--model", "tiny", "--catalog", catalog)
    assert_one_line_error(result, f"cannot write {weights}", "which this command reads")
    assert weights.read_bytes() == before


def test_an_output_where_a_model_is_fetched_to_is_refused_once_it_is_there(tmp_path, home, server, catalog):
    """Not visible before the fetch (nothing is there yet): refused by the check after it, untouched."""
    result = cli("convert-model", "tiny", home / "tiny", "--catalog", catalog)
    assert result.exit_code == 1 and "Traceback" not in result.output
    error = result.stderr.strip().splitlines()[-1]  # after the download's progress lines
    assert (
        error
        == f"error: cannot write {home / 'tiny'}: it is {home / 'tiny'}, which this command reads; give another output"
    )
    assert sorted(p.name for p in (home / "tiny").iterdir()) == ["download.json", "options.json", "weights.hdf5"]


def test_the_same_name_means_the_catalog_model_in_every_command_with_one_notice(
    tmp_path, home, server, catalog, text, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny").mkdir()  # a folder named like the catalog model, here
    notice = "warning: 'tiny' is a model of the catalog, and also the folder ./tiny here: the model is used"
    results = []
    for args in (
        ("convert-model", "tiny", tmp_path / "converted"),
        ("elmo", text, tmp_path / "out.hdf5", "--all", "--model", "tiny"),
    ):
        with warnings.catch_warnings():  # each command as in a process of its own: Python shows a warning once
            results.append(cli(*args, "--catalog", catalog))
        assert results[-1].exit_code == 0, results[-1].output
    for result in results:
        assert [line for line in result.stderr.splitlines() if line.startswith("warning:")] == [
            notice + "; write ./tiny to use the folder"
        ]
    folder = cli("convert-model", "./tiny", tmp_path / "converted-folder", "--catalog", catalog)
    assert_one_line_error(folder, "tiny holds no model this package reads")  # the (empty) folder, not the model
    assert "warning:" not in folder.stderr


def test_finetune_checks_its_configs_output_folders_before_the_download(tmp_path, home, server, catalog, text):
    config = json.loads((REPO / "configs" / "finetune_elmo_task.json").read_text(encoding="utf-8"))
    config["data"].update(train=[str(text)], valid=str(text))
    config["training"]["output_dir"] = str(text)  # a file: no folder can be written there
    path = tmp_path / "finetune.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    assert_one_line_error(cli("finetune-elmo", "tiny", path, "--catalog", catalog), "is a file, not a directory")
    assert server.requests == {} and not (home / "tiny").exists()
