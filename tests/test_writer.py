"""Atomic writes of model directories: a save killed midway or between the two renames leaves the
previous version (and the reader names what happened); other files are never overwritten; an output
folder that does not exist is refused before a model loads.

Writes that never destroy what the user owns: a symlinked model directory keeps its link, a full disk
is one line and leaves no temporary (a rerun works), a device or FIFO is never replaced, and the
package's bundled models are never overwritten by accident."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner
from util import GOOD_SENSE, assert_one_line_error, cli, sense_file, sentences_file, tiny_bilm, writer_leftovers

from spacy_contextual import writer
from spacy_contextual.cli import app
from spacy_contextual.errors import ContextualError, ModelDirError
from spacy_contextual.formats import model_dir
from spacy_contextual.formats.bilm_dir import load_bilm, save_bilm
from spacy_contextual.formats.model_dir import load_tensors
from spacy_contextual.hub.resolver import bundled_model_dir
from spacy_contextual.writer import ALLOW_PACKAGE_WRITE_ENV, atomic_file

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


def test_a_save_that_fails_midway_leaves_the_previous_directory(noskip_dir, tmp_path, monkeypatch):
    from spacy_contextual.formats import model_dir

    target = Path(shutil.copytree(noskip_dir, tmp_path / "model"))
    before = load_tensors(target)
    calls = []

    def killed_while_writing(tensors, filename):
        calls.append(filename)
        raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(model_dir, "save_file", killed_while_writing)
    with pytest.raises(KeyboardInterrupt):
        save_bilm(load_bilm(noskip_dir), target)
    assert calls and writer_leftovers(tmp_path) == []
    after = load_tensors(target)
    assert all(torch.equal(before[k], after[k]) for k in before)
    load_bilm(target)  # manifest and all


def test_a_kill_between_the_two_renames_is_named_by_the_reader(noskip_dir, tmp_path, monkeypatch):
    target = Path(shutil.copytree(noskip_dir, tmp_path / "model"))
    monkeypatch.setattr(writer, "_exchange", lambda first, second: False)  # no renameat2: two renames
    real_rename = Path.rename

    def killed_after_the_first(self, destination):
        if str(self).endswith(writer.MARK + "new"):
            raise KeyboardInterrupt("killed between the renames")
        return real_rename(self, destination)

    monkeypatch.setattr(Path, "rename", killed_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        save_bilm(load_bilm(noskip_dir), target)
    monkeypatch.undo()
    (previous,) = writer.interrupted_versions(target, ("old",))
    assert not target.exists() and previous.is_dir()
    with pytest.raises(ModelDirError, match=rf"{previous.name} is there: a save was interrupted; rename"):
        load_bilm(target)
    load_bilm(previous)  # the previous version, complete


def test_saving_over_a_folder_of_other_files_is_refused_and_notes_beside_a_model_are_kept(noskip_dir, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "thesis.tex").write_text("precious", encoding="utf-8")
    with pytest.raises(ContextualError, match="already holds other files"):
        save_bilm(load_bilm(noskip_dir), folder)
    assert (folder / "thesis.tex").read_text() == "precious"
    model = Path(shutil.copytree(noskip_dir, tmp_path / "model"))
    (model / "TRAINING.md").write_text("how it was made", encoding="utf-8")
    save_bilm(load_bilm(noskip_dir), model)
    assert (model / "TRAINING.md").read_text() == "how it was made"


def test_an_output_folder_that_does_not_exist_is_refused_before_the_model_loads(tmp_path, monkeypatch):
    import spacy_contextual.embedders.cove_embedder as cove

    def no_loading(*args, **kwargs):
        raise AssertionError("the model was loaded before the output was checked")

    monkeypatch.setattr(cove.CoveEmbedder, "load", no_loading)
    source = sentences_file(tmp_path)
    result = cli("translate", source, "--output", tmp_path / "no" / "such" / "out.de.txt")
    assert_one_line_error(result, "the folder", "does not exist")
    good = sense_file(tmp_path / "ok.jsonl", [GOOD_SENSE])
    result = cli("sense-probe", good, "--json", tmp_path / "missing" / "out.json")
    assert_one_line_error(result, "missing", "does not exist")


runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(arg) for arg in args])


def leftovers(root):
    return writer_leftovers(root)


def same_weights(a, b):
    return all((x == y).all() for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


@pytest.mark.timeout(60)
def test_saving_over_a_symlinked_model_directory_writes_where_it_points(tmp_path):
    real = save_bilm(tiny_bilm(seed=0), tmp_path / "store" / "model")
    (real / "notes.txt").write_text("mine")
    (tmp_path / "link").symlink_to(real)
    save_bilm(tiny_bilm(seed=1), tmp_path / "link")
    assert (tmp_path / "link").is_symlink() and os.readlink(tmp_path / "link") == str(real)
    assert same_weights(load_bilm(real), tiny_bilm(seed=1)) and (real / "notes.txt").read_text() == "mine"
    assert leftovers(tmp_path) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["link", "store"]


@pytest.mark.timeout(60)
def test_other_files_are_kept_without_copying_a_linked_folder(tmp_path):
    model = save_bilm(tiny_bilm(seed=0), tmp_path / "model")
    big = tmp_path / "corpus"  # a large folder the user linked into the model directory
    big.mkdir()
    (big / "data.txt").write_text("x" * 100_000)
    (model / "corpus").symlink_to(big)
    (model / "notes").mkdir()
    (model / "notes" / "log.txt").write_text("mine")
    inode = (model / "notes" / "log.txt").stat().st_ino
    save_bilm(tiny_bilm(seed=1), model)
    assert (model / "corpus").is_symlink() and os.readlink(model / "corpus") == str(big)
    assert (model / "notes" / "log.txt").read_text() == "mine"
    assert (model / "notes" / "log.txt").stat().st_ino == inode  # a hard link: no bytes copied
    assert same_weights(load_bilm(model), tiny_bilm(seed=1)) and leftovers(tmp_path) == []


def test_a_symlinked_output_file_keeps_its_link(tmp_path):
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    with atomic_file(tmp_path / "link.json") as tmp:
        tmp.write_text("new")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"
    assert leftovers(tmp_path) == []


def full_disk_save_file(tensors, filename, *args, **kwargs):
    """The weight file write fails half way with ENOSPC, as on a full disk."""
    with open(filename, "wb") as handle:
        handle.write(b"\0" * 100)
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), filename)


@pytest.mark.timeout(60)
def test_a_full_disk_leaves_the_old_model_and_no_temporary(tmp_path, monkeypatch):
    save_bilm(tiny_bilm(seed=0), tmp_path / "model")
    with monkeypatch.context() as full_disk:
        full_disk.setattr(model_dir, "save_file", full_disk_save_file)
        with pytest.raises(writer.StorageError, match=r"could not write .*model: the disk is full"):
            save_bilm(tiny_bilm(seed=1), tmp_path / "model")
    assert leftovers(tmp_path) == [] and same_weights(load_bilm(tmp_path / "model"), tiny_bilm(seed=0))
    save_bilm(tiny_bilm(seed=1), tmp_path / "model")  # the rerun works
    assert same_weights(load_bilm(tmp_path / "model"), tiny_bilm(seed=1)) and leftovers(tmp_path) == []


@pytest.mark.timeout(120)
def test_export_on_a_full_disk_is_one_line(tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.setattr(model_dir, "save_file", full_disk_save_file)
    result = invoke("export-elmo", tiny_model_dir, tmp_path / "export", "--no-bilm-tf")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "the disk is full" in result.stderr
    assert leftovers(tmp_path) == [] and not (tmp_path / "export").exists()


@pytest.mark.timeout(60)
def test_a_fifo_is_never_replaced(tmp_path, tiny_model_dir):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ContextualError, match="device, FIFO or other special file"):
        with atomic_file(fifo) as tmp:
            tmp.write_text("x")
    text = tmp_path / "in.txt"
    text.write_text("the bank .\n")
    result = invoke("sense-probe", text, "--json", fifo)
    assert result.exit_code == 1 and "other special file" in result.stderr
    result = invoke("export-elmo", tiny_model_dir, fifo)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "not a directory" in result.stderr
    assert fifo.exists() and not fifo.is_file() and leftovers(tmp_path) == []
    (tiny_model_dir / "manifest.json").unlink()
    os.mkfifo(tiny_model_dir / "manifest.json")
    result = invoke("write-manifest", tiny_model_dir)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "other special file" in result.stderr


@pytest.mark.timeout(120)
def test_the_bundled_models_are_not_overwritten_by_accident(tmp_path, tiny_model_dir, monkeypatch):
    bundled = bundled_model_dir("elmo")
    before = (bundled / "manifest.json").read_bytes()
    (tmp_path / "alias").symlink_to(bundled.parent)
    for target in (bundled, tmp_path / "alias" / "elmo", bundled / ".." / "elmo"):
        with pytest.raises(ContextualError, match=ALLOW_PACKAGE_WRITE_ENV):
            save_bilm(tiny_bilm(), target)
    result = invoke("export-elmo", tiny_model_dir, bundled)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and ALLOW_PACKAGE_WRITE_ENV in result.stderr
    result = invoke("write-manifest", bundled)
    assert result.exit_code == 1 and ALLOW_PACKAGE_WRITE_ENV in result.stderr
    assert (bundled / "manifest.json").read_bytes() == before and leftovers(bundled.parent) == []
    fake_assets = tmp_path / "assets"  # asked for explicitly: allowed (on a stand-in for the assets)
    monkeypatch.setattr(writer, "ASSETS", fake_assets)
    monkeypatch.setenv(ALLOW_PACKAGE_WRITE_ENV, "1")
    save_bilm(tiny_bilm(), fake_assets / "elmo")
    assert load_bilm(fake_assets / "elmo").config.n_layers == tiny_bilm().config.n_layers


def test_the_shipped_configs_write_outside_the_package():
    configs = bundled_model_dir("elmo").parents[2] / "configs"
    for path in configs.glob("*.json"):
        training = json.loads(path.read_text()).get("training", {})
        for key in ("output_dir", "export_dir"):
            assert not str(training.get(key) or "").startswith("spacy_contextual"), (path, key)
    assert len(list(configs.glob("*.json"))) >= 3
