"""``spacy-contextual elmo`` / ``cove``: bad input and output paths are refused before a model loads, with
the file (and line) named, and leave nothing behind; nothing the user owns is destroyed and inputs
are never mixed: OUTPUT may not be INPUT or a model file (through links too), a device or a folder;
OUTPUT.parts/ without the tool's marker is left alone; a full disk is one line and leaves no
temporary file; a corpus changed during or between runs is refused; a damaged part is recomputed;
streams are read once; out-of-range options are refused before any work; the cove command's layout.
Tiny models and the bundled ones."""

import errno
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner
from util import tiny_cove_dir, writer_leftovers

from spacy_contextual.cli import app
from spacy_contextual.corpus import folder as folder_module
from spacy_contextual.corpus.folder import MARKER
from spacy_contextual.embedders.cove_embedder import CoveEmbedder
from spacy_contextual.hub.resolver import resolve_model_dir

runner = CliRunner()
# a folder that holds no model: --model takes it (it exists) but loading it would fail, so an error about
# OUTPUT shows it was never loaded
NOT_A_MODEL = str(Path(__file__).resolve().parent)
LINES = ["the bank of the river .", "", "a b c", "the bank"] * 5


def invoke(*args):
    return runner.invoke(app, [str(arg) for arg in args])


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("the bank .\nthe river\n", encoding="utf-8")
    return path


@pytest.fixture
def lines_file(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def read_output(path):
    with h5py.File(path, "r") as f:
        return json.loads(f["sentence_to_index"][0]), {key: f[key][...] for key in f if key != "sentence_to_index"}


def messages(stderr):
    """stderr without the progress bar's redraws."""
    return [line for line in re.split(r"[\r\n]", stderr) if line.strip() and not line.startswith(("elmo:", "cove:"))]


def one_error_line(result, *fragments):
    assert result.exit_code == 1, result.output
    lines = messages(result.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


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
    missing = invoke("elmo", text_file, tmp_path / "no" / "out.hdf5", "--all", "--model", NOT_A_MODEL)
    assert missing.exit_code == 1 and "does not exist" in missing.stderr
    not_folder = invoke("cove", text_file, text_file / "out.hdf5", "--all", "--model", NOT_A_MODEL)
    assert not_folder.exit_code == 1 and "does not exist" in not_folder.stderr
    is_dir = invoke("elmo", text_file, tmp_path, "--all", "--model", NOT_A_MODEL)
    assert is_dir.exit_code == 1 and "is a directory" in is_dir.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_read_only_output_folder_is_refused(tmp_path, text_file):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = invoke("elmo", text_file, folder / "out.hdf5", "--all", "--model", NOT_A_MODEL)
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


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_output_that_is_the_input_is_refused_through_links(tmp_path, lines_file, kind):
    before = lines_file.read_bytes()
    (tmp_path / "symlink.txt").symlink_to(lines_file)
    os.link(lines_file, tmp_path / "hardlink.txt")
    for output in (lines_file, tmp_path / "symlink.txt", tmp_path / "hardlink.txt"):
        one_error_line(invoke(kind, lines_file, output, "--top"), "which this command reads")
    assert lines_file.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hardlink.txt", "in.txt", "symlink.txt"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_output_that_is_a_model_file_is_refused(tmp_path, lines_file, kind):
    """The bundled model's own files, a hard link to one, and a new file inside its folder."""
    model = resolve_model_dir(kind)
    weights = next(model.glob("*.safetensors"))
    before = weights.stat()
    os.link(weights, tmp_path / "weights-link")
    for output in (weights, model / "config.json", model / "new.hdf5"):  # the bundled model the command reads
        one_error_line(invoke(kind, lines_file, output, "--top"), f"cannot write {model}", "which this command reads")
    one_error_line(invoke(kind, lines_file, tmp_path / "weights-link", "--top"), f"a file of {model}")
    assert weights.stat().st_mtime_ns == before.st_mtime_ns and not (model / "new.hdf5").exists()
    assert not (model / "new.hdf5.parts").exists()


@pytest.mark.timeout(60)
def test_output_that_is_a_bilm_tf_weight_file_is_refused(tmp_path, lines_file):
    options, weights = tmp_path / "options.json", tmp_path / "weights.hdf5"
    options.write_text("{}")
    weights.write_bytes(b"not read")
    for output in (options, weights):
        result = invoke("elmo", lines_file, output, "--top", "--options-file", options, "--weight-file", weights)
        one_error_line(result, f"it is {output}")
    assert weights.read_bytes() == b"not read"


@pytest.mark.timeout(60)
def test_a_device_or_a_folder_is_refused(tmp_path, lines_file):
    one_error_line(invoke("elmo", lines_file, "/dev/null", "--top", "--model", NOT_A_MODEL), "special file")
    one_error_line(invoke("elmo", lines_file, tmp_path, "--top", "--model", NOT_A_MODEL), "is a directory")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    one_error_line(invoke("elmo", lines_file, fifo, "--top", "--model", NOT_A_MODEL), "special file")


@pytest.mark.timeout(60)
def test_a_parts_folder_the_tool_did_not_make_is_left_alone(tmp_path, lines_file, tiny_model_dir):
    out = tmp_path / "out.hdf5"
    user = tmp_path / "out.hdf5.parts"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    (user / "part-00000-000000.hdf5").write_text("also mine")
    one_error_line(invoke("elmo", lines_file, out, "--top", "--model", tiny_model_dir), f"{MARKER} file")
    assert sorted(p.name for p in user.iterdir()) == ["notes.txt", "part-00000-000000.hdf5"]
    assert not out.exists()


@pytest.mark.timeout(60)
def test_merge_removes_only_the_tools_files(tmp_path, lines_file, tiny_model_dir):
    """A user's file put into OUTPUT.parts/ during a run survives the clean-up, and so does the folder."""
    out = tmp_path / "out.hdf5"
    first = invoke("elmo", lines_file, out, "--top", "--model", tiny_model_dir, "--virtual")
    assert first.exit_code == 0, first.output
    (tmp_path / "out.hdf5.parts" / "notes.txt").write_text("mine")
    merged = invoke("elmo", lines_file, out, "--top", "--model", tiny_model_dir, "--merge")
    assert merged.exit_code == 0, merged.output
    assert sorted(p.name for p in (tmp_path / "out.hdf5.parts").iterdir()) == [MARKER, "notes.txt"]
    assert len(read_output(out)[1]) == len(LINES)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "option, value",
    [
        ("--batch-size", 2**62),
        ("--batch-size", 0),
        ("--batch-size", -3),
        ("--processes", 0),
        ("--processes", -1),
        ("--max-window-tokens", 0),
        ("--max-window-tokens", 2**40),
    ],
)
def test_out_of_range_options_are_one_line_before_any_work(tmp_path, lines_file, option, value):
    result = invoke("elmo", lines_file, tmp_path / "out.hdf5", "--top", option, value, "--model", NOT_A_MODEL)
    one_error_line(result, option, str(value))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_a_line_longer_than_the_window_gets_its_whole_line_vectors(tmp_path, tiny_model_dir, kind):
    """``--max-window-tokens``: a longer line runs in windows, each LSTM direction's state carried across
    them, and OUTPUT holds the vectors the whole line gets; the window is part of the run's record."""
    model = tiny_model_dir if kind == "elmo" else tiny_cove_dir(tmp_path / "cove")
    lines = ["the bank of the river", " ".join(["the man rides a horse and i like green eggs"] * 5), ""]
    text = tmp_path / "in.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    outputs = {}
    for window in (None, "7"):
        out = tmp_path / f"out-{window}.hdf5"
        options = [] if window is None else ["--max-window-tokens", window]
        result = invoke(kind, text, out, "--all", "--model", model, "--virtual", *options)
        assert result.exit_code == 0, result.output
        outputs[window] = read_output(out)[1]
        run = json.loads((tmp_path / f"{out.name}.parts" / "run.json").read_text(encoding="utf-8"))
        assert run["encoder"].get("max_window_tokens") == (None if window is None else 7)
    for key, whole in outputs[None].items():
        np.testing.assert_allclose(outputs["7"][key], whole, rtol=0, atol=2e-5)
    assert outputs["7"]["1"].shape[1] == 50


@pytest.mark.timeout(60)
def test_too_many_processes_are_refused(tmp_path, lines_file):
    result = invoke("elmo", lines_file, tmp_path / "o.hdf5", "--top", "--processes", 10**6, "--model", NOT_A_MODEL)
    one_error_line(result, "--processes must be between 1 and")


@pytest.mark.integration
@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", ["part", "output", "spool"])
def test_a_full_disk_is_one_line_leaves_no_temporary_file_and_a_rerun_works(
    tmp_path, lines_file, tiny_model_dir, monkeypatch, where
):
    out = tmp_path / "out.hdf5"
    source = lines_file
    if where == "spool":
        source = tmp_path / "fifo"
        os.mkfifo(source)
        writer = subprocess.Popen(["sh", "-c", f"cat {lines_file} > {source}"])
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def no_space(*args, **kwargs):
        raise full

    if where == "part":
        monkeypatch.setattr(h5py.Group, "create_dataset", no_space)
    elif where == "output":
        monkeypatch.setattr(h5py.h5o, "copy", no_space)
    else:
        monkeypatch.setattr(folder_module.hashlib, "sha256", lambda: _FailingDigest(full))
    result = invoke("elmo", source, out, "--top", "--model", tiny_model_dir)
    one_error_line(result, "the disk is full", "run the same command to resume")
    if where == "spool":
        writer.wait(timeout=10)
        assert not (tmp_path / "out.hdf5.parts").exists()  # nothing of the stream is kept
    assert writer_leftovers(tmp_path) == [] and not out.exists()
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]  # the corpus job's own part files
    monkeypatch.undo()
    rerun = invoke("elmo", lines_file, out, "--top", "--model", tiny_model_dir)
    assert rerun.exit_code == 0, rerun.output
    assert len(read_output(out)[1]) == len(LINES)


class _FailingDigest:
    def __init__(self, error):
        self.error = error

    def update(self, data):
        raise self.error


@pytest.mark.timeout(60)
def test_a_corpus_changed_between_run_and_resume_is_refused(tmp_path, lines_file, tiny_model_dir):
    out = tmp_path / "out.hdf5"
    assert invoke("elmo", lines_file, out, "--top", "--model", tiny_model_dir, "--virtual").exit_code == 0
    lines_file.write_text("\n".join(reversed(LINES)) + "\n", encoding="utf-8")  # same size, other lines
    one_error_line(invoke("elmo", lines_file, out, "--top", "--model", tiny_model_dir), "INPUT changed")


@pytest.mark.timeout(60)
def test_a_corpus_replaced_during_the_run_is_refused_and_nothing_is_written(tmp_path, lines_file, monkeypatch):
    """The file is swapped, with its size and mtime kept, after the parts were made: the lines are hashed
    again before OUTPUT is written, so the swap is found."""
    from spacy_contextual.corpus.parts import PartsFolder

    out = tmp_path / "out.hdf5"
    stat = lines_file.stat()
    write_output = PartsFolder.write_output

    def swap_then_write(self, *args):
        lines_file.write_text("\n".join(reversed(LINES)) + "\n", encoding="utf-8")
        os.utime(lines_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return write_output(self, *args)

    monkeypatch.setattr(PartsFolder, "write_output", swap_then_write)
    one_error_line(invoke("elmo", lines_file, out, "--top", "--batch-size", 1), "INPUT changed while it was embedded")
    assert not out.exists()


@pytest.mark.timeout(60)
def test_a_damaged_part_is_named_and_recomputed(tmp_path, lines_file, tiny_model_dir):
    out = tmp_path / "out.hdf5"
    args = ("elmo", lines_file, out, "--all", "--model", tiny_model_dir, "--virtual", "--batch-size", 1)
    assert invoke(*args).exit_code == 0
    reference = read_output(out)[1]
    part = tmp_path / "out.hdf5.parts" / "part-00000-000000.hdf5"
    with h5py.File(part, "r+") as f:
        f["2"][0, 0, 0] += 1.0  # one number, the file still valid HDF5
    rerun = invoke(*args)
    assert rerun.exit_code == 0, rerun.output
    assert f"{part} is damaged" in rerun.output
    index, arrays = read_output(out)
    assert all(np.array_equal(arrays[key], reference[key]) for key in reference)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_stream_is_read_once_with_the_bundled_model(tmp_path, lines_file):
    """stdin through a pipe: spooled to OUTPUT.parts/, so the count and the embedding see the same lines."""
    out = tmp_path / "out.hdf5"
    command = [sys.executable, "-m", "spacy_contextual", "elmo", "/dev/stdin", str(out), "--top"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, input=lines_file.read_bytes(), capture_output=True, env=env, timeout=100)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    index, arrays = read_output(out)
    assert len(arrays) == len(LINES) and index["a b c"] == str(len(LINES) - 2)
    assert not (tmp_path / "out.hdf5.parts").exists()


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_stream_under_torchrun_is_refused_at_once(tmp_path, lines_file, monkeypatch):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("WORLD_SIZE", "2")
    one_error_line(invoke("elmo", fifo, tmp_path / "out.hdf5", "--top"), "is a stream")


@pytest.mark.timeout(60)
def test_cove_with_the_bundled_model_and_cr_line_ends(tmp_path):
    path = tmp_path / "cr.txt"
    path.write_bytes(b"the bank\rof the river\r\r")
    out = tmp_path / "out.hdf5"
    result = invoke("cove", path, out, "--top")
    assert result.exit_code == 0, result.output
    index, arrays = read_output(out)
    assert index == {"the bank": "0", "of the river": "1", "": "2"}
    assert [arrays[str(i)].shape[0] for i in range(3)] == [2, 3, 0]


@pytest.mark.timeout(60)
def test_tiny_cove_output_next_to_its_model_is_fine(tmp_path, lines_file):
    """Protection is by identity, not by folder: OUTPUT beside the model folder is allowed."""
    model = tiny_cove_dir(tmp_path / "cove")
    result = invoke("cove", lines_file, tmp_path / "out.hdf5", "--top", "--model", model)
    assert result.exit_code == 0, result.output


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_zcat_into_stdin_with_two_processes(tmp_path, lines_file, tiny_model_dir):
    """``zcat corpus.gz | spacy-contextual elmo /dev/stdin out.hdf5 --processes 2``: the stream is
    spooled once, both ranks read the copy, and OUTPUT equals one process's on the file."""
    packed = tmp_path / "corpus.gz"
    packed.write_bytes(gzip.compress(lines_file.read_bytes()))
    out, reference = tmp_path / "out.hdf5", tmp_path / "reference.hdf5"
    assert invoke("elmo", lines_file, reference, "--top", "--model", tiny_model_dir).exit_code == 0
    command = (
        f"zcat {packed} | {sys.executable} -m spacy_contextual elmo /dev/stdin {out} --top --model {tiny_model_dir}"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(f"{command} --processes 2", shell=True, capture_output=True, env=env, timeout=280)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    (index, arrays), (expected_index, expected) = read_output(out), read_output(reference)
    assert index == expected_index and arrays.keys() == expected.keys()
    assert all(np.allclose(arrays[key], expected[key], atol=1e-6) for key in expected)
    assert not (tmp_path / "out.hdf5.parts" / "input.spool").exists()


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_stream_that_fails_leaves_no_copy_behind(tmp_path, tiny_model_dir):
    out = tmp_path / "out.hdf5"
    command = [sys.executable, "-m", "spacy_contextual", "elmo", "/dev/stdin", str(out), "--top"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [*command, "--model", str(tiny_model_dir)], input=b"fine\nnot \xe9 utf-8\n", capture_output=True, env=env
    )
    assert done.returncode == 1 and "not UTF-8 text" in done.stderr.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny_elmo"]
