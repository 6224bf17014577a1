"""``spacy-contextual elmo`` / ``cove``: bad input and output paths are refused before a model loads, with
the file (and line) named, and leave nothing behind; the cove command's layout."""

import json
import os

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner
from util import tiny_cove_dir

from spacy_contextual.cli import app
from spacy_contextual.embedders.cove import CoveEmbedder

runner = CliRunner()
MISSING_MODEL = "/nonexistent/model"  # loading it would fail: an error about OUTPUT shows it was never loaded


def invoke(*args):
    return runner.invoke(app, [str(arg) for arg in args])


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("the bank .\nthe river\n", encoding="utf-8")
    return path


def test_invalid_utf8_is_refused_with_file_and_line_and_leaves_no_output(tmp_path, tiny_model_dir):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"the bank .\n\nthe \xe9 river\n")
    out = tmp_path / "out.hdf5"
    result = invoke("elmo", bad, out, "--top", "--model", tiny_model_dir)
    assert result.exit_code == 1
    assert f"{bad}:3: not UTF-8 text" in result.stderr and "--errors replace" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "tiny_elmo"]  # no OUTPUT, no parts
    sharded = invoke("elmo", bad, out, "--top", "--model", tiny_model_dir, "--processes", "2")
    assert f"{bad}:3: not UTF-8 text" in sharded.stderr  # before any rank starts
    replaced = invoke("elmo", bad, out, "--top", "--model", tiny_model_dir, "--errors", "replace")
    assert replaced.exit_code == 0, replaced.output
    with h5py.File(out) as f:
        assert "the \ufffd river" in json.loads(f["sentence_to_index"][0])


def test_output_folder_is_checked_before_the_model_loads(tmp_path, text_file):
    missing = invoke("elmo", text_file, tmp_path / "no" / "out.hdf5", "--all", "--model", MISSING_MODEL)
    assert missing.exit_code == 1 and "does not exist" in missing.stderr
    not_folder = invoke("cove", text_file, text_file / "out.hdf5", "--all", "--model", MISSING_MODEL)
    assert not_folder.exit_code == 1 and "does not exist" in not_folder.stderr
    is_dir = invoke("elmo", text_file, tmp_path, "--all", "--model", MISSING_MODEL)
    assert is_dir.exit_code == 1 and "is a directory" in is_dir.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_read_only_output_folder_is_refused(tmp_path, text_file):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = invoke("elmo", text_file, folder / "out.hdf5", "--all", "--model", MISSING_MODEL)
    finally:
        folder.chmod(0o755)
    assert result.exit_code == 1 and "cannot write to" in result.stderr


def test_a_failed_run_keeps_the_previous_output(tmp_path, text_file, tiny_model_dir):
    out = tmp_path / "out.hdf5"
    assert invoke("elmo", text_file, out, "--top", "--model", tiny_model_dir).exit_code == 0
    before = out.read_bytes()
    text_file.write_bytes(b"ok\n\xff\n")
    assert invoke("elmo", text_file, out, "--top", "--model", tiny_model_dir).exit_code != 0
    assert out.read_bytes() == before


def test_bad_option_combinations(text_file, tmp_path, tiny_model_dir):
    out = tmp_path / "out.hdf5"
    stateful = invoke("elmo", text_file, out, "--all", "--model", tiny_model_dir, "--stateful", "--processes", "2")
    assert stateful.exit_code == 1 and "so it runs in one process" in stateful.stderr
    errors = invoke("cove", text_file, out, "--all", "--errors", "ignore")
    assert errors.exit_code == 1 and "must be strict or replace" in errors.stderr
    modes = invoke("cove", text_file, out, "--all", "--top")
    assert modes.exit_code == 1 and "exactly one of --all, --top, --average" in modes.stderr


@pytest.mark.parametrize("mode", ["--all", "--top", "--average"])
def test_cove_command_layout(tmp_path, mode):
    model = tiny_cove_dir(tmp_path / "cove")
    lines = ["the man rides the horse .", "", "i like green eggs and ham"]
    text = tmp_path / "in.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    result = invoke("cove", text, out, mode, "--model", model)
    assert result.exit_code == 0, result.output
    expected = CoveEmbedder.load(model).embed_sentences([line.split() for line in lines])
    with h5py.File(out) as f:
        assert sorted(f) == ["0", "1", "2", "sentence_to_index"]
        for i, layers in enumerate(expected):
            reference = {"--all": layers, "--top": layers[-1], "--average": layers.mean(0)}[mode]
            np.testing.assert_allclose(f[str(i)][...], reference, atol=1e-6)
        assert f["1"].shape == ((3, 0, 12) if mode == "--all" else (0, 12))
