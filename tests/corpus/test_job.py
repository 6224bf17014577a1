"""``embed_corpus`` in one process: the AllenNLP layout, parts and resuming, virtual datasets that
plain h5py reads (also after the folder moved), and runs with other settings refused."""

import json
import os
import shutil

import h5py
import numpy as np
import pytest
from util import tiny_cove_dir

from spacy_contextual.corpus.folder import PartsError
from spacy_contextual.corpus.job import embed_corpus, select_layers
from spacy_contextual.corpus.lines import Corpus
from spacy_contextual.embedders.cove_embedder import CoveEmbedder

LINES = ["the bank of the river .", "", "the bank", "naïve café 東京 🙂", "the bank", "a b c d e f g h"] * 7
ENCODER = {"kind": "elmo", "test": 1}


def read_output(path):
    with h5py.File(path, "r") as f:
        index = json.loads(f["sentence_to_index"][0])
        arrays = {key: f[key][...] for key in f if key != "sentence_to_index"}
        virtual = {key: f[key].is_virtual for key in arrays}
    return index, arrays, virtual


def test_layout_matches_the_embedder(tmp_path, elmo, corpus):
    out = tmp_path / "out.hdf5"
    assert embed_corpus(elmo, corpus, out, "average", encoder=ENCODER, batch_size=4, progress=False) == len(LINES)
    index, arrays, virtual = read_output(out)
    expected = elmo.embed_sentences([line.split() for line in LINES], batch_size=4)
    assert sorted(arrays, key=int) == [str(i) for i in range(len(LINES))] and not any(virtual.values())
    for i, layers in enumerate(expected):
        np.testing.assert_allclose(arrays[str(i)], layers.mean(0), atol=1e-6)
    assert arrays["1"].shape == (0, 32)
    # AllenNLP's dict: a repeated sentence maps to its last line, keys in first-seen order
    reference = {}
    for i, line in enumerate(LINES):
        reference[" ".join(line.split())] = str(i)
    assert index == reference and list(index) == list(reference)
    assert not (tmp_path / "out.hdf5.parts").exists()  # one process merges and deletes its parts


def test_resume_keeps_committed_parts_and_gives_the_same_output(tmp_path, elmo, corpus):
    out = tmp_path / "out.hdf5"
    embed_corpus(elmo, corpus, out, "all", encoder=ENCODER, batch_size=4, merge=False, progress=False)
    parts = sorted((tmp_path / "out.hdf5.parts").glob("part-*.hdf5"))
    assert len(parts) == 2  # 42 lines, 32 per part (8 batches of 4)
    first_index, first, virtual = read_output(out)
    assert all(virtual[key] for key in first if first[key].size)
    stamp = parts[0].stat().st_mtime_ns
    out.unlink()
    parts[1].unlink()  # as if killed while the second part was being written
    (tmp_path / "out.hdf5.parts" / "part-00000-000001.hdf5.tmp").write_bytes(b"half a part")
    embed_corpus(elmo, corpus, out, "all", encoder=ENCODER, batch_size=4, merge=False, progress=False)
    assert parts[0].stat().st_mtime_ns == stamp and parts[1].is_file()  # the first part was not recomputed
    assert not list((tmp_path / "out.hdf5.parts").glob("*.tmp"))
    index, arrays, _ = read_output(out)
    assert index == first_index and arrays.keys() == first.keys()
    for key in first:
        np.testing.assert_array_equal(arrays[key], first[key])


def test_virtual_output_moves_with_its_parts_and_never_reads_zeros(tmp_path, elmo, corpus):
    folder = tmp_path / "run 100%"
    folder.mkdir()
    embed_corpus(elmo, corpus, folder / "v 5%.hdf5", "top", encoder=ENCODER, batch_size=2, merge=False, progress=False)
    _, before, _ = read_output(folder / "v 5%.hdf5")
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    shutil.move(folder, moved)
    cwd = os.getcwd()
    os.chdir(tmp_path / "elsewhere")  # relative source paths resolve from the file, not the working directory
    try:
        _, after, virtual = read_output("moved/v 5%.hdf5")
    finally:
        os.chdir(cwd)
    assert virtual["0"] and before.keys() == after.keys()
    for key in before:
        np.testing.assert_array_equal(after[key], before[key])
    shutil.rmtree(moved / "v 5%.hdf5.parts")
    with h5py.File(moved / "v 5%.hdf5", "r") as f:
        assert np.isnan(f["0"][...]).all()  # a virtual dataset without its part reads as NaN
        assert f["1"].shape == (0, 32)


def test_other_settings_are_refused(tmp_path, elmo, corpus):
    out = tmp_path / "out.hdf5"
    embed_corpus(elmo, corpus, out, "top", encoder=ENCODER, batch_size=2, merge=False, progress=False)
    with pytest.raises(PartsError, match=r"another run \(.*layers: 'top' there, 'all' now.*delete"):
        embed_corpus(elmo, corpus, out, "all", encoder=ENCODER, batch_size=2, merge=False, progress=False)
    with pytest.raises(PartsError, match="encoder"):
        embed_corpus(elmo, corpus, out, "top", encoder={"kind": "cove"}, batch_size=2, progress=False)
    corpus.path.write_text("another corpus\n", encoding="utf-8")
    with pytest.raises(PartsError, match="input"):
        embed_corpus(elmo, corpus, out, "top", encoder=ENCODER, batch_size=2, progress=False)


def test_cove_layout_and_empty_corpus(tmp_path, corpus):
    cove = CoveEmbedder.load(tiny_cove_dir(tmp_path / "cove"))
    assert cove.layer_widths == [8, 12, 12]
    out = tmp_path / "cove.hdf5"
    embed_corpus(cove, corpus, out, "all", encoder={"kind": "cove"}, progress=False)
    _, arrays, _ = read_output(out)
    expected = cove.embed_sentences([line.split() for line in LINES])
    for i, layers in enumerate(expected):
        np.testing.assert_allclose(arrays[str(i)], layers, atol=1e-6)
    assert arrays["0"].shape == (3, 6, 12) and not arrays["0"][0, :, 8:].any()  # GloVe zero-padded
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    embed_corpus(cove, Corpus(empty), tmp_path / "empty.hdf5", "top", encoder={"kind": "cove"}, progress=False)
    with h5py.File(tmp_path / "empty.hdf5", "r") as f:
        assert list(f) == ["sentence_to_index"] and json.loads(f["sentence_to_index"][0]) == {}


def test_select_layers():
    layers = np.arange(24, dtype=np.float32).reshape(3, 2, 4)
    np.testing.assert_array_equal(select_layers(layers, "top"), layers[2])
    np.testing.assert_array_equal(select_layers(layers, "average"), layers.mean(0))
    with pytest.raises(ValueError, match="layers must be one of all, top, average"):
        select_layers(layers, "bottom")
