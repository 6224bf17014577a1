"""The parts: a damaged part and the ones after it are recomputed, and a corpus that grows during a
run is refused before the next part is written."""

import h5py
import pytest

from spacy_contextual.corpus.folder import PartsError
from spacy_contextual.corpus.job import embed_corpus
from spacy_contextual.corpus.parts import PartsFolder

LINES = ["the bank of the river .", "a b c"] * 40  # 80 lines: 3 parts of 32 at batch size 4
ENCODER = {"kind": "elmo", "test": 1}


def embed(elmo, corpus, out, **kwargs):
    return embed_corpus(elmo, corpus, out, "top", encoder=ENCODER, batch_size=4, progress=False, **kwargs)


def test_a_damaged_part_and_the_later_ones_are_recomputed(tmp_path, elmo, corpus):
    out = tmp_path / "out.hdf5"
    embed(elmo, corpus, out, merge=False)
    folder = PartsFolder(out, 1, 32)
    paths = [folder.part_path(0, number) for number in range(3)]
    stamps = [path.stat().st_mtime_ns for path in paths]
    with h5py.File(paths[1], "r+") as part:
        part["40"][0, 0] = 7.0
    log = []
    assert [summary.lines for summary in folder.resume(0, log.append)] == [32]
    assert log == [
        f"{paths[1]} is damaged (its checksum does not match its data); recomputing it and the parts after it"
    ]
    assert [path.is_file() for path in paths] == [True, False, False]
    with pytest.raises(PartsError, match="is missing"):
        folder.write_output(corpus, len(LINES), (32,), False, True)
    embed(elmo, corpus, out, merge=False)
    assert paths[0].stat().st_mtime_ns == stamps[0] and all(path.is_file() for path in paths)


def test_a_truncated_part_is_recomputed(tmp_path, elmo, corpus):
    out = tmp_path / "out.hdf5"
    embed(elmo, corpus, out, merge=False)
    part = PartsFolder(out, 1, 32).part_path(0, 2)
    part.write_bytes(part.read_bytes()[:500])
    log = []
    embed(elmo, corpus, out, merge=False, log=log.append)
    assert len(log) == 1 and str(part) in log[0]
    with h5py.File(out, "r") as f:
        assert f[str(len(LINES) - 1)].shape == (3, 32)


def test_a_corpus_that_grows_during_the_run_is_refused_before_the_next_part(tmp_path, elmo, corpus, monkeypatch):
    write_part = PartsFolder.write_part

    def grow_after_the_first(self, rank, number, *args):
        summary = write_part(self, rank, number, *args)
        with corpus.path.open("a", encoding="utf-8") as handle:
            handle.write("one more line\n")
        return summary

    monkeypatch.setattr(PartsFolder, "write_part", grow_after_the_first)
    with pytest.raises(PartsError, match="changed while it was embedded"):
        embed(elmo, corpus, tmp_path / "out.hdf5")
    assert not (tmp_path / "out.hdf5").exists()
    assert [p.name for p in (tmp_path / "out.hdf5.parts").glob("part-*")] == ["part-00000-000000.hdf5"]
