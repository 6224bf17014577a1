"""Every command fails with one line on stderr and exit code 1 (the installed command too), and
--debug / SPACY_CONTEXTUAL_DEBUG show the traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from util import GOOD_SENSE, SKIP, assert_one_line_error, bundled_copy, cli, flip_middle, sense_file, sentences_file

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


def test_a_bad_weight_file_is_one_line(tmp_path):
    truncated = tmp_path / "weights.hdf5"
    truncated.write_bytes((SKIP / "lm_weights.hdf5").read_bytes()[:100_000])
    result = cli("elmo", sentences_file(tmp_path), tmp_path / "out.hdf5", "--all",
                 "--options-file", SKIP / "options.json", "--weight-file", truncated)  # fmt: skip
    assert_one_line_error(result, "weights.hdf5", "truncated")
    model = bundled_copy("elmo", tmp_path)
    flip_middle(model / "model.safetensors")
    result = cli("sense-probe", sense_file(tmp_path / "ok.jsonl", [GOOD_SENSE] * 4), "--model", model)
    assert_one_line_error(result, "model.safetensors does not match its SHA-256")


def test_debug_shows_the_traceback(tmp_path, monkeypatch):
    result = cli("--debug", "translate", tmp_path / "missing.txt")
    assert isinstance(result.exception, FileNotFoundError)
    monkeypatch.setenv("SPACY_CONTEXTUAL_DEBUG", "1")
    assert isinstance(cli("translate", tmp_path / "missing.txt").exception, FileNotFoundError)


def test_the_installed_command_prints_one_line_and_exits_1(tmp_path):
    bad = sense_file(tmp_path / "bad.jsonl", [GOOD_SENSE, "{not json"])
    done = subprocess.run(
        [sys.executable, "-m", "spacy_contextual", "sense-probe", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [f"error: {bad}:2: not JSON (Expecting property name enclosed in double "
                                                "quotes at column 2)"]  # fmt: skip
