"""OUTPUT.parts/: only the tool's own names count as its files, and only a real folder of that name
is used."""

import pytest

from spacy_contextual.corpus.folder import MARKER, OWN_FILE, PartsError, check_parts_folder


def test_only_the_tools_own_names_count_as_its_files():
    own = ["part-00001-000002.hdf5", "part-00001-000002.hdf5.tmp", "rank-00000.lock", "run.json", "input.spool"]
    assert all(OWN_FILE.fullmatch(name) for name in [*own, MARKER, "output.tmp", "sentence_to_index.json.tmp"])
    others = ["notes.txt", "part-1-2.hdf5", "part-00001-000002.hdf5.bak", "run.json.orig", "data.hdf5"]
    assert not any(OWN_FILE.fullmatch(name) for name in others)


def test_a_file_or_a_symlink_named_like_the_parts_folder_is_refused(tmp_path):
    (tmp_path / "a.hdf5.parts").write_text("mine")
    with pytest.raises(PartsError, match="not a folder"):
        check_parts_folder(tmp_path / "a.hdf5")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "b.hdf5.parts").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PartsError, match="not a folder"):
        check_parts_folder(tmp_path / "b.hdf5")
