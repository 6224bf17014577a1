"""Every output of every command goes through the one guarded writer. The matrix is generated from the
CLI itself: each command's parameters declare their role (``cli/params.py``), and each output parameter
of each command gets the same hostile cases, so a new command that writes is covered as soon as it
declares its output. A command path parameter without a role fails the test.

Cases: OUTPUT = an input of the same command, OUTPUT inside an input folder (a model's file), OUTPUT =
a FIFO, OUTPUT inside the package's bundled models. Each is refused in one line, before any work, and
leaves the target as it was. Commands that run cheaply are also run for real with the user's files
beside the output (``OUT.tmp``, ``OUT.old``, ``.OUT.tmp``), which must survive untouched.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner
from util import assert_one_line_error, tiny_bilm, writer_leftovers

from spacy_contextual.cli import app
from spacy_contextual.cli.params import is_directory, path_role, role_of
from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.locations import ASSETS

runner = CliRunner()
COMMANDS = typer.main.get_command(app).commands
PATH_WORDS = (
    "file",
    "dir",
    "path",
    "output",
    "out",
    "input",
    "json",
    "corpus",
    "config",
    "text",
    "source",
    "reference",
)
NOT_PATHS = {"app": {"pipeline", "sense_data", "elmo_model", "cove_model"}}  # read by the dashboard, never written


def output_params():
    return [
        pytest.param(name, param.name, id=f"{name}:{param.name}")
        for name, command in sorted(COMMANDS.items())
        for param in command.params
        if role_of(param) == "output"
    ]


def test_every_path_parameter_declares_its_role():
    """A path parameter without a role would escape the matrix: name them here when they appear."""
    models = {"name", "catalog"}  # download NAME (a catalog name only), --catalog FILE
    missing = [
        f"{name}:{param.name}"
        for name, command in COMMANDS.items()
        for param in command.params
        if role_of(param) is None
        and param.name not in models | NOT_PATHS.get(name, set())
        and any(word in param.name for word in PATH_WORDS)
        and param.name not in ("markdown", "forget_sentences", "no_softmax", "no_bilm_tf")
    ]
    assert missing == []


def test_the_matrix_covers_the_writing_commands():
    names = {param.values[0] for param in output_params()}
    assert {"convert-text", "convert-sentiment", "translate", "train-glove", "evaluate-lm", "sense-probe"} <= names
    assert {"elmo", "cove", "export-elmo", "export-cove", "package-cove", "convert-model", "train-cove"} <= names


def param_of(command_name: str, name: str):
    return next(param for param in COMMANDS[command_name].params if param.name == name)


def input_params(command_name: str):
    return [
        param for param in COMMANDS[command_name].params if role_of(param) in ("input", "inplace") and param.required
    ]


def arguments(command_name: str, inputs: dict[str, Path], output_name: str, output: Path) -> list[str]:
    """A command line for ``command_name`` with ``output`` as its output ``output_name`` and a stand-in
    for every other required parameter (an existing file or folder for inputs, 'default' for a model)."""
    args: list[str] = []
    for param in COMMANDS[command_name].params:
        role = path_role(param)
        if param.name == output_name:
            value = str(output)
        elif not param.required:
            continue
        elif role_of(param) is None:
            value = "default"
        elif role is not None and role.role == "output":
            value = str(output.parent / f"other-{param.name}")
        else:  # an input: a file, a folder, or a model (a folder)
            value = str(inputs["dir"] if is_directory(param) else inputs["file"])
        args += [param.opts[0], value] if param.opts[0].startswith("-") else [value]
    return [command_name, *args]


@pytest.fixture
def inputs(tmp_path):
    folder = tmp_path / "model"
    save_bilm(tiny_bilm(), folder)
    text = tmp_path / "input.txt"
    text.write_text("hello world .\n", encoding="utf-8")
    return {"file": text, "dir": folder}


def hostile_targets(command_name: str, output_name: str, inputs: dict[str, Path]) -> list[Path]:
    """The command's own inputs as its output: the input file (or, for a folder output, the folder
    holding it), and a model folder's file (or the folder itself)."""
    kinds = {is_directory(param) for param in input_params(command_name)}
    folder_output = is_directory(param_of(command_name, output_name))
    targets = []
    if False in kinds:
        targets.append(inputs["file"].parent if folder_output else inputs["file"])
    if True in kinds:
        targets.append(inputs["dir"] if folder_output else inputs["dir"] / "config.json")
    return targets


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command_name, output_name", output_params())
def test_an_output_that_is_an_input_is_refused_before_any_work(command_name, output_name, inputs):
    targets = hostile_targets(command_name, output_name, inputs)
    assert targets, f"{command_name} writes {output_name} but reads no declared input"
    files = [inputs["file"], *inputs["dir"].iterdir()]
    before = {path: path.read_bytes() for path in files}
    for target in targets:
        result = runner.invoke(app, arguments(command_name, inputs, output_name, target))
        assert_one_line_error(result, "which this command reads")
    assert {path: path.read_bytes() for path in files} == before
    assert writer_leftovers(inputs["file"].parent) == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command_name, output_name", output_params())
def test_a_fifo_or_the_bundled_models_are_refused_as_output(command_name, output_name, inputs, tmp_path):
    directory = is_directory(param_of(command_name, output_name))
    if not directory:
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        result = runner.invoke(app, arguments(command_name, inputs, output_name, fifo))
        assert_one_line_error(result, "FIFO or other special file")
        assert fifo.exists() and not fifo.is_file()
    inside = ASSETS / "elmo" / ("new-folder" if directory else "vocab-new.txt")
    result = runner.invoke(app, arguments(command_name, inputs, output_name, inside))
    message = assert_one_line_error(result, str(ASSETS))  # the bundled models; or the one this command reads
    assert "bundled models" in message or "which this command reads" in message
    assert not inside.exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command_name, output_name", output_params())
def test_no_overwrite_refuses_an_existing_output_of_every_command_before_any_work(
    command_name, output_name, inputs, tmp_path
):
    """Every command that writes takes --no-overwrite (added by GuardedCommand), and refuses an output that
    exists: a file, or a folder that is not empty."""
    assert "--no-overwrite" in {opt for param in COMMANDS[command_name].params for opt in param.opts}
    existing = tmp_path / "existing"
    if is_directory(param_of(command_name, output_name)):
        existing.mkdir()
        (existing / "mine.txt").write_text("mine\n", encoding="utf-8")
        kept = existing / "mine.txt"
    else:
        existing.write_text("mine\n", encoding="utf-8")
        kept = existing
    result = runner.invoke(app, [*arguments(command_name, inputs, output_name, existing), "--no-overwrite"])
    assert_one_line_error(result, f"{existing}", "--no-overwrite refuses to replace it")
    assert kept.read_text(encoding="utf-8") == "mine\n" and writer_leftovers(tmp_path) == []


def test_only_commands_that_write_take_no_overwrite():
    for name, command in COMMANDS.items():
        writes = any(role_of(param) == "output" for param in command.params)
        assert ("--no-overwrite" in {opt for param in command.params for opt in param.opts}) == writes, name


def sentiment_file(path: Path, split: str) -> Path:
    records = [{"id": i, "text": f"a film {i}", "label": ["pos", "neg"][i % 2], "split": split} for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.timeout(60)
@pytest.mark.parametrize("split", ["../victim/train", "/tmp/absolute", ".hidden", "a/b"])
def test_convert_sentiment_keeps_names_from_the_data_inside_the_output_folder(tmp_path, split):
    result = runner.invoke(
        app, ["convert-sentiment", str(sentiment_file(tmp_path / "in.jsonl", split)), str(tmp_path / "out")]
    )
    assert_one_line_error(result, "a split name", "inside")
    assert not (tmp_path / "victim").exists() and not Path("/tmp/absolute.spacy").exists()


def user_siblings(output: Path) -> dict[Path, bytes]:
    siblings = {output.with_name(output.name + ".tmp"): b"mine 1", output.with_name(output.name + ".old"): b"mine 2"}
    siblings[output.with_name("." + output.name + ".tmp")] = b"mine 3"
    for path, data in siblings.items():
        path.write_bytes(data)
    return siblings


@pytest.mark.timeout(120)
def test_a_successful_write_leaves_the_users_files_beside_it(tmp_path):
    """convert-text and convert-sentiment run for real, twice (the second replaces the first output)."""
    import spacy
    from spacy.tokens import DocBin

    docs = DocBin(docs=[spacy.blank("en")("One two three .")])
    corpus = tmp_path / "corpus.spacy"
    docs.to_disk(corpus)
    text = tmp_path / "text.txt.gz"
    siblings = user_siblings(text)
    for _ in range(2):
        assert runner.invoke(app, ["convert-text", str(corpus), str(text)]).exit_code == 0
    assert gzip.open(text, "rt").read() == "One two three .\n"
    out = tmp_path / "sentiment"
    out.mkdir()
    siblings |= user_siblings(out / "train.spacy")
    for _ in range(2):
        result = runner.invoke(
            app, ["convert-sentiment", str(sentiment_file(tmp_path / "in.jsonl", "train")), str(out)]
        )
        assert result.exit_code == 0, result.stderr
    assert {path: path.read_bytes() for path in siblings} == siblings
    assert writer_leftovers(tmp_path) == []


@pytest.mark.timeout(60)
def test_convert_text_that_fails_leaves_the_old_output_whole(tmp_path):
    from spacy.tokens import DocBin

    empty = tmp_path / "empty.spacy"
    DocBin().to_disk(empty)
    output = tmp_path / "text.txt"
    output.write_text("my earlier text\n", encoding="utf-8")
    result = runner.invoke(app, ["convert-text", str(empty), str(output)])
    assert result.exit_code == 1 and result.stderr.splitlines()[-1].endswith("holds no tokens; is it the right corpus?")
    assert output.read_text(encoding="utf-8") == "my earlier text\n"


@pytest.mark.timeout(120)
def test_translate_into_the_models_folder_is_refused(tmp_path):
    """A model named by the resolver is protected too, though it is no path parameter of the command."""
    model = shutil.copytree(ASSETS / "cove", tmp_path / "cove")
    english = tmp_path / "en.txt"
    english.write_text("A man .\n", encoding="utf-8")
    vocab = next(p for p in Path(model).iterdir() if p.suffix == ".txt")
    before = vocab.read_bytes()
    result = runner.invoke(app, ["translate", str(english), "--model", str(model), "-o", str(vocab)])
    assert_one_line_error(result, "which this command reads")
    assert vocab.read_bytes() == before


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_file_size_limit_while_writing_hdf5_is_one_line_and_leaves_nothing_half_written(tmp_path, tiny_model_dir):
    """``ulimit -f`` makes the kernel refuse the write (EFBIG) instead of killing the process (SIGXFSZ)."""
    import resource
    import subprocess
    import sys

    text = tmp_path / "in.txt"
    text.write_text("".join(f"sentence number {i} with a few more words .\n" for i in range(400)), encoding="utf-8")
    out = tmp_path / "out.hdf5"

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64_000, 64_000))

    command = [
        sys.executable,
        "-m",
        "spacy_contextual",
        "elmo",
        str(text),
        str(out),
        "--all",
        "--model",
        str(tiny_model_dir),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=100, preexec_fn=small_files)
    lines = finished.stderr.strip().splitlines()
    assert finished.returncode == 1, finished.stderr[-2000:]
    assert lines[-1].startswith("error: ") and "larger than this system allows" in lines[-1], finished.stderr[-2000:]
    assert "Traceback" not in finished.stderr and not out.exists()
    assert writer_leftovers(tmp_path) == []


@pytest.mark.timeout(60)
def test_exports_take_the_storage_dtype_as_dtype_and_the_old_spellings_still_work(tmp_path):
    """--dtype names the storage dtype on every export; --precision (a compute precision elsewhere) and
    --fp16 stay as hidden aliases that say the new spelling."""
    model = tmp_path / "model"
    save_bilm(tiny_bilm(), model)
    assert runner.invoke(app, ["export-elmo", str(model), str(tmp_path / "a"), "--dtype", "float16"]).exit_code == 0
    old = runner.invoke(app, ["export-elmo", str(model), str(tmp_path / "b"), "--fp16", "--no-bilm-tf"])
    assert old.exit_code == 0 and "--fp16 on an export is now --dtype float16" in old.stderr
    assert_one_line_error(
        runner.invoke(app, ["export-elmo", str(model), str(tmp_path / "c"), "--dtype", "int4"]), "--dtype"
    )
    for name in ("export-elmo", "export-cove", "package-cove"):
        text = runner.invoke(app, [name, "--help"]).output
        assert "--dtype" in text and "--fp16" not in text
