"""Which format a model directory is in, and loading each by its directory alone: ours, an
ELMoForManyLangs archive, a bilm-tf options/weights pair, the salesforce CoVe .pth with GloVe."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import spacy
import torch
from util import MANYLANGS_FIXTURE, tiny_bilm

from spacy_contextual.embedders import CoveEmbedder, ElmoEmbedder, load_encoder
from spacy_contextual.errors import ModelDirError
from spacy_contextual.formats.bilm_tf import export_bilm_tf
from spacy_contextual.formats.detect import BILM_TF, COVE_PTH, MANYLANGS, OURS, detect_format
from spacy_contextual.formats.word_vectors import write_glove
from spacy_contextual.layers import cove_model_dir_loader, elmo_model_dir_loader

SENTENCE = [["the", "bank", "."]]


def test_each_format_is_told_by_its_files(tmp_path, tiny_model_dir):
    assert detect_format(tiny_model_dir) == OURS
    assert detect_format(MANYLANGS_FIXTURE / "model") == MANYLANGS
    export_bilm_tf(tiny_bilm(), tmp_path / "bilm_tf")
    assert detect_format(tmp_path / "bilm_tf") == BILM_TF
    cove = tmp_path / "cove"
    cove.mkdir()
    (cove / "wmtlstm-8f474287.pth").write_bytes(b"")
    (cove / "glove.840B.300d.txt").write_text("the 0.1 0.2\n")
    assert detect_format(cove) == COVE_PTH
    with pytest.raises(ModelDirError, match="holds a CoVe model"):
        load_encoder("elmo", cove)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelDirError, match="holds no model"):
        load_encoder("elmo", tmp_path / "empty")


def test_bilm_tf_directory_loads_by_its_path(tmp_path, tiny_model_dir):
    export_bilm_tf(tiny_bilm(), tmp_path / "published")
    for name in ("options.json", "weights.hdf5"):  # the published file names
        (tmp_path / "published" / name).rename(tmp_path / "published" / f"elmo_2x16_tiny_{name}")
    expected = ElmoEmbedder.load(tiny_model_dir).embed_sentences(SENTENCE)[0]
    got = load_encoder("elmo", tmp_path / "published").embed_sentences(SENTENCE)[0]
    np.testing.assert_allclose(got, expected, atol=1e-6)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(str(tmp_path / "published")))
    np.testing.assert_allclose(nlp("the bank .")._.elmo_data.layers, expected, atol=1e-6)
    shutil.copy(tmp_path / "published" / "elmo_2x16_tiny_weights.hdf5", tmp_path / "published" / "other_weights.hdf5")
    with pytest.raises(ModelDirError, match="has 2 files .*weights.hdf5.* it needs exactly one"):
        load_encoder("elmo", tmp_path / "published")


def test_published_cove_directory_loads_by_its_path(tmp_path):
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(300, 300, num_layers=2, bidirectional=True, batch_first=True)
    torch.save(lstm.state_dict(), tmp_path / "wmtlstm-00000000.pth")
    vectors = np.random.default_rng(1).normal(size=(3, 300)).astype(np.float32)
    write_glove(tmp_path / "glove.tiny.300d.txt", ["the", "bank", "."], vectors)
    expected = CoveEmbedder.from_pth(tmp_path / "wmtlstm-00000000.pth", tmp_path / "glove.tiny.300d.txt")
    expected = expected.embed_sentences(SENTENCE)[0]
    np.testing.assert_allclose(load_encoder("cove", tmp_path).embed_sentences(SENTENCE)[0], expected, atol=1e-6)
    nlp = spacy.blank("en")
    nlp.add_pipe("cove")
    nlp.get_pipe("cove").initialize(loader=cove_model_dir_loader(str(tmp_path)))
    np.testing.assert_allclose(nlp("the bank .")._.cove_data.layers, expected, atol=1e-5)
