"""``--precision`` on ``elmo`` / ``cove`` (one process and ``--processes 2``), ``translate`` and
``sense-probe``: bf16 runs the model in bf16 (its output equals the embedder's in bf16, within the
budget of fp32), bad values are one-line errors, and a CPU without native bf16 gets one warning line."""

import gzip
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner
from util import SHARED, tiny_bilm

from spacy_contextual import precision
from spacy_contextual.cli import app
from spacy_contextual.embedders import load_encoder
from spacy_contextual.formats.bilm_dir import save_bilm

runner = CliRunner()
BUDGET = 0.01  # per-layer relative error, bf16 vs fp32 (benchmarks/precision_accuracy.py)


@pytest.fixture(autouse=True)
def quiet_bf16_warning(monkeypatch):
    monkeypatch.setattr(precision, "_warned_slow_bf16", True)


@pytest.fixture(scope="module")
def valid_file(tmp_path_factory):
    with gzip.open(SHARED / "data" / "lm_corpus" / "valid.txt.gz", "rt", encoding="utf-8") as handle:
        lines = [line.strip() for _, line in zip(range(8), handle, strict=False)]
    path = tmp_path_factory.mktemp("precision") / "valid.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, [line.split() for line in lines]


def read_all(path, count):
    with h5py.File(path) as f:
        return [f[str(i)][...] for i in range(count)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_bf16_embedding_of_the_bundled_models(tmp_path, valid_file, kind):
    path, sentences = valid_file
    out = tmp_path / "out.hdf5"
    result = runner.invoke(app, [kind, str(path), str(out), "--all", "--precision", "bf16"])
    assert result.exit_code == 0, result.output
    written = read_all(out, len(sentences))
    exact = load_encoder(kind).embed_sentences(sentences)
    in_bf16 = load_encoder(kind, precision="bf16").embed_sentences(sentences)
    for array, low, full in zip(written, in_bf16, exact, strict=True):
        np.testing.assert_allclose(array, low, atol=1e-6)
        error = np.linalg.norm(array - full, axis=(1, 2)) / np.maximum(np.linalg.norm(full, axis=(1, 2)), 1e-12)
        assert error.max() < BUDGET
    assert any(not np.array_equal(array, full) for array, full in zip(written, exact, strict=True))


@pytest.mark.integration
@pytest.mark.slow  # two ranks start in their own processes: ~50 s on a busy 2-core machine
@pytest.mark.timeout(300)
def test_bf16_sharded(tmp_path, valid_file, tiny_model_dir):
    path, sentences = valid_file
    out = tmp_path / "out.hdf5"
    command = [sys.executable, "-m", "spacy_contextual", "elmo", str(path), str(out), "--all"]
    command += ["--model", str(tiny_model_dir), "--precision", "bf16", "--processes", "2"]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    in_bf16 = load_encoder("elmo", tiny_model_dir, precision="bf16").embed_sentences(sentences)
    exact = load_encoder("elmo", tiny_model_dir).embed_sentences(sentences)
    for array, low, full in zip(read_all(out, len(sentences)), in_bf16, exact, strict=True):
        np.testing.assert_allclose(array, low, atol=0.02 * np.abs(full).max())  # the ranks batch differently
        np.testing.assert_allclose(array, full, atol=0.05 * np.abs(full).max())


def test_translate_takes_the_precision(tmp_path):
    source = tmp_path / "en.txt"
    source.write_text("a man plays a guitar .\nthe dog runs .\n", encoding="utf-8")
    result = runner.invoke(app, ["translate", str(source), "--beam", "1", "--precision", "bf16"])
    assert result.exit_code == 0, result.output
    expected = load_encoder("cove", precision="bf16").translate(["a man plays a guitar .", "the dog runs ."], beam=1)
    assert result.stdout == "".join(t.text + "\n" for t in expected)


def test_sense_probe_takes_the_precision(tmp_path, tiny_model_dir):
    senses = tmp_path / "slice.jsonl.gz"
    with gzip.open(senses, "wt", encoding="utf-8") as out:
        for name in ("hard", "serve"):
            with gzip.open(SHARED / "data" / "senses" / f"{name}.jsonl.gz", "rt", encoding="utf-8") as lines:
                out.writelines(line for _, line in zip(range(30), lines, strict=False))
    result = runner.invoke(app, ["sense-probe", str(senses), "--model", str(tiny_model_dir), "--precision", "bf16"])
    assert result.exit_code == 0, result.output
    assert "MFS" in result.output and "hard" in result.output and "LSTM-2" in result.output


@pytest.mark.parametrize(
    ("value", "message"),
    [("int4", "error: unknown precision 'int4': use fp32, bf16, fp16"), ("fp16", "fp16 runs on CUDA only")],
)
def test_bad_precisions_are_one_line_errors(tmp_path, valid_file, value, message):
    out = tmp_path / "out.hdf5"
    result = runner.invoke(app, ["elmo", str(valid_file[0]), str(out), "--top", "--precision", value])
    assert result.exit_code == 1 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()


def test_emulated_bf16_warns_in_one_line(tmp_path, valid_file, monkeypatch):
    monkeypatch.setattr(precision, "_warned_slow_bf16", False)
    monkeypatch.setattr(precision, "bf16_is_fast", lambda: False)
    model = save_bilm(tiny_bilm(), tmp_path / "tiny_elmo")
    args = ["elmo", str(valid_file[0]), str(tmp_path / "out.hdf5"), "--top", "--model", str(model)]
    result = runner.invoke(app, [*args, "--precision", "bf16"])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "slower than fp32" in warnings[0]
