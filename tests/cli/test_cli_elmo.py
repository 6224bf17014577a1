"""``spacy-contextual elmo``: the AllenNLP HDF5 layout, modes, model sources and errors."""

import json
import subprocess
import sys

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from spacy_contextual.cli import app
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder

runner = CliRunner()
LINES = ["The quick brown fox .", "", "naïve café 東京 🙂", "<S> and </S> are special"]


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "input.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("mode", ["--all", "--top", "--average"])
def test_output_layout(tmp_path, input_file, tiny_anchor, mode):
    root, _, _ = tiny_anchor
    out = tmp_path / "out.hdf5"
    args = [
        "elmo",
        str(input_file),
        str(out),
        mode,
        "--options-file",
        str(root / "options.json"),
        "--weight-file",
        str(root / "weights.hdf5"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    expected = ElmoEmbedder.from_bilm_tf(root / "options.json", root / "weights.hdf5").embed_sentences(
        [line.split() for line in LINES]
    )
    with h5py.File(out) as f:
        assert sorted(f.keys()) == ["0", "1", "2", "3", "sentence_to_index"]
        index = json.loads(f["sentence_to_index"][0])
        assert index["The quick brown fox ."] == "0" and index[""] == "1"
        for i, layers in enumerate(expected):
            reference = {"--all": layers, "--top": layers[-1], "--average": layers.mean(0)}[mode]
            assert f[str(i)].dtype == np.float32
            np.testing.assert_allclose(f[str(i)][...], reference, atol=1e-6)
        assert f["1"].shape == ((3, 0, 32) if mode == "--all" else (0, 32))


def test_model_dir_and_stateful(tmp_path, input_file, tiny_model_dir):
    out = tmp_path / "out.hdf5"
    result = runner.invoke(
        app,
        ["elmo", str(input_file), str(out), "--all", "--model", str(tiny_model_dir), "--stateful", "--batch-size", "2"],
    )
    assert result.exit_code == 0, result.output
    with h5py.File(out) as f:
        assert f["0"].shape == (3, 5, 32)
    forget = runner.invoke(
        app, ["elmo", str(input_file), str(out), "--top", "--model", str(tiny_model_dir), "--forget-sentences"]
    )
    assert forget.exit_code == 0, forget.output
    with h5py.File(out) as f:
        assert "sentence_to_index" not in f and f["0"].shape == (5, 32)


def test_bad_invocations(tmp_path, input_file, tiny_model_dir, tiny_anchor):
    root, _, _ = tiny_anchor
    out = str(tmp_path / "o.hdf5")
    no_mode = runner.invoke(app, ["elmo", str(input_file), out, "--model", str(tiny_model_dir)])
    assert no_mode.exit_code != 0 and "exactly one of --all, --top, --average" in no_mode.output
    half = runner.invoke(app, ["elmo", str(input_file), out, "--all", "--options-file", str(root / "options.json")])
    assert half.exit_code != 0 and "go together" in half.output


@pytest.mark.integration
def test_console_script_runs(tmp_path, input_file, tiny_model_dir):
    out = tmp_path / "out.hdf5"
    cmd = [
        sys.executable,
        "-m",
        "spacy_contextual",
        "elmo",
        str(input_file),
        str(out),
        "--top",
        "--model",
        str(tiny_model_dir),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "wrote 4 sentences" in done.stdout
