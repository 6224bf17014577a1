"""``~`` in a path is expanded wherever the package takes one (a command's INPUT and OUTPUT, a model, a
catalog, a setting), or refused in one line where there is no such home (``~nosuchuser/m``, or
``~draft.txt``, which names a user): never ``RuntimeError: Could not determine home directory``, never a
file written under a name the user did not mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from util import assert_one_line_error, cli, tiny_bilm

from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.user_paths import HomeError, expand_user

NO_USER = "~nosuchuser-of-these-tests"


@pytest.fixture
def home(tmp_path, monkeypatch):
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.chdir(tmp_path)
    return folder


def docbin(path: Path) -> Path:
    import spacy
    from spacy.tokens import DocBin

    DocBin(docs=[spacy.blank("en")("One two three .")]).to_disk(path)
    return path


def test_expand_user(home, monkeypatch):
    assert expand_user("~") == home and expand_user("~/a/b") == home / "a" / "b"
    assert expand_user("./~x") == Path("./~x") and expand_user("a~b") == Path("a~b")
    for text in (f"{NO_USER}/m", "~draft.txt"):
        with pytest.raises(HomeError, match=rf"names no home folder \(there is no user .*write ./{text}"):
            expand_user(text)
    monkeypatch.setenv("HOME", "")  # os.path would make "~/x" the root's "/x"
    with pytest.raises(HomeError, match=r"'~' names no home folder \(HOME is empty\)"):
        expand_user("~/x", "OUTPUT")


def test_a_tilde_with_no_home_is_one_line_for_input_output_and_model(home, tmp_path):
    corpus = docbin(tmp_path / "good.spacy")
    assert_one_line_error(cli("convert-text", "~draft.txt", "out.txt"), "'~draft.txt' names no home folder")
    assert_one_line_error(cli("convert-text", corpus, "~notes.txt"), "there is no user 'notes.txt'", "./~notes.txt")
    text = tmp_path / "in.txt"
    text.write_text("a b\n", encoding="utf-8")
    line = assert_one_line_error(cli("elmo", text, "out.hdf5", "--top", "--model", f"{NO_USER}/m"), "names no home")
    assert "RuntimeError" not in line
    assert_one_line_error(cli("--catalog", f"{NO_USER}/c.json", "models"), "names no home folder")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["good.spacy", "home", "in.txt"]


def test_a_tilde_with_a_home_is_expanded_everywhere(home, tmp_path, monkeypatch):
    docbin(home / "good.spacy")
    result = cli("convert-text", "~/good.spacy", "~/out.txt")
    assert result.exit_code == 0, result.output[-1000:]
    assert (home / "out.txt").read_text(encoding="utf-8") == "One two three .\n"
    save_bilm(tiny_bilm(), home / "model")
    result = cli("export-elmo", "~/model", "~/exported", "--no-bilm-tf")
    assert result.exit_code == 0 and (home / "exported" / "config.json").is_file(), result.output[-1000:]
    catalog = home / "catalog.json"
    entry = {"encoder": "elmo", "format": "model_dir", "files": {"config.json": {"url": "file:///nowhere"}}}
    catalog.write_text(json.dumps({"models": {"mine": entry}}), encoding="utf-8")
    monkeypatch.setenv("SPACY_CONTEXTUAL_HOME", "~/cache")
    listed = cli("--catalog", "~/catalog.json", "models")
    assert listed.exit_code == 0 and "mine" in listed.stdout and f"cache: {home / 'cache'}" in listed.stdout
