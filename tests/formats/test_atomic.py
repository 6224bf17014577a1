"""Atomic writes of model directories: a save killed midway or between the two renames leaves the
previous version (and the reader names what happened); other files are never overwritten; an output
folder that does not exist is refused before a model loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from util import GOOD_SENSE, assert_one_line_error, cli, sense_file, sentences_file

from spacy_contextual.errors import ContextualError, ModelDirError
from spacy_contextual.formats import atomic
from spacy_contextual.formats.bilm_dir import load_bilm, save_bilm
from spacy_contextual.formats.model_dir import load_tensors

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
    assert calls and not (tmp_path / "model.tmp").exists()
    after = load_tensors(target)
    assert all(torch.equal(before[k], after[k]) for k in before)
    load_bilm(target)  # manifest and all


def test_a_kill_between_the_two_renames_is_named_by_the_reader(noskip_dir, tmp_path, monkeypatch):
    target = Path(shutil.copytree(noskip_dir, tmp_path / "model"))
    monkeypatch.setattr(atomic, "_exchange", lambda first, second: False)  # no renameat2: two renames
    real_rename = Path.rename

    def killed_after_the_first(self, destination):
        if str(self).endswith(".tmp"):
            raise KeyboardInterrupt("killed between the renames")
        return real_rename(self, destination)

    monkeypatch.setattr(Path, "rename", killed_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        save_bilm(load_bilm(noskip_dir), target)
    monkeypatch.undo()
    assert not target.exists() and (tmp_path / "model.old").is_dir()
    with pytest.raises(ModelDirError, match=r"model.old is there: a save was interrupted; rename"):
        load_bilm(target)
    load_bilm(tmp_path / "model.old")  # the previous version, complete


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
    import spacy_contextual.embedders.cove as cove

    def no_loading(*args, **kwargs):
        raise AssertionError("the model was loaded before the output was checked")

    monkeypatch.setattr(cove.CoveEmbedder, "load", no_loading)
    source = sentences_file(tmp_path)
    result = cli("translate", source, "--output", tmp_path / "no" / "such" / "out.de.txt")
    assert_one_line_error(result, "the folder", "does not exist")
    good = sense_file(tmp_path / "ok.jsonl", [GOOD_SENSE])
    result = cli("sense-probe", good, "--json", tmp_path / "missing" / "out.json")
    assert_one_line_error(result, "missing", "does not exist")
