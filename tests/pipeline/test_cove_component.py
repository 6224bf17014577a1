"""The ``cove`` component and ``CoveListener.v1`` on a tiny CoVe encoder built in code."""

from __future__ import annotations

import numpy as np
import pytest
import spacy
import torch
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from thinc.api import Config, fix_random_seed
from util import tiny_cove_dir

from spacy_contextual.embedders.cove_embedder import CoveEmbedder
from spacy_contextual.hub import resolver
from spacy_contextual.layers import cove_model_dir_loader, layer_weights

torch.set_num_threads(1)
TEXT = "The man rides a horse. A zebra rides the bank."  # "zebra": outside the vocabulary


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_cove_dir(tmp_path_factory.mktemp("cove") / "tiny")


def make_nlp(model_dir, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("cove", config=config)
    nlp.get_pipe("cove").initialize(loader=cove_model_dir_loader(str(model_dir)))
    return nlp


def test_layers_match_the_cove_embedder(model_dir):
    nlp = make_nlp(model_dir)
    doc = nlp(TEXT)
    data = doc._.cove_data
    assert data.layers.shape == (3, len(doc), 12)
    assert data.layer_names == ["glove", "cove1", "cove2"] and data.layer_widths == [8, 12, 12]
    assert not data.layers[0, :, 8:].any()  # GloVe is zero-padded to the LSTM width
    assert not data.layer(0)[[t.text for t in doc].index("zebra")].any()  # unknown word: zero GloVe
    expected = CoveEmbedder.load(model_dir).embed_sentences([[t.text for t in doc]])[0]
    np.testing.assert_allclose(data.layers, expected, atol=1e-5)  # the same (layers, n, width) arrays


def test_serialization_round_trips(model_dir, tmp_path):
    nlp = make_nlp(model_dir)
    doc = nlp(TEXT)
    docs = list(DocBin(store_user_data=True, docs=[doc]).get_docs(nlp.vocab))
    assert docs[0]._.cove_data == doc._.cove_data
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert np.abs(loaded(TEXT)._.cove_data.layers - doc._.cove_data.layers).max() <= 1e-6
    assert loaded(TEXT)[2].similarity(doc[2]) == pytest.approx(1.0, abs=1e-5)


def test_empty_and_whitespace_docs(model_dir):
    nlp = make_nlp(model_dir)
    assert nlp("")._.cove_data.layers.shape == (3, 0, 12)
    spaced = nlp("the  man")
    assert not spaced._.cove_data.layers[:, 1].any()


CONFIG = """
[paths]
cove_model = null

[nlp]
lang = "en"
pipeline = ["cove", "tagger"]

[components]

[components.cove]
factory = "cove"

[components.tagger]
factory = "tagger"

[components.tagger.model]
@architectures = "spacy.Tagger.v2"
nO = null

[components.tagger.model.tok2vec]
@architectures = "spacy-contextual.CoveListener.v1"
width = 16
combine = "concat"

[initialize]

[initialize.components]

[initialize.components.cove]

[initialize.components.cove.loader]
@misc = "spacy-contextual.CoveModelDir.v1"
path = ${paths.cove_model}
"""
TRAIN = [("I like green eggs", ["PRON", "VERB", "ADJ", "NOUN"]), ("Eat the blue ham", ["VERB", "DET", "ADJ", "NOUN"])]


def build(model_dir, combine="concat", frozen=True):
    config = Config().from_str(CONFIG, interpolate=False)
    config["paths"]["cove_model"] = str(model_dir)
    config["components"]["tagger"]["model"]["tok2vec"]["combine"] = combine
    config["components"]["cove"]["frozen"] = frozen
    fix_random_seed(0)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": g}) for t, g in TRAIN]
    optimizer = nlp.initialize(lambda: examples)
    optimizer.learn_rate = 0.01
    return nlp, examples, optimizer


def encoder_state(nlp):
    encoder = nlp.get_pipe("cove").model
    return {k: v.clone() for k, v in encoder.shims[0]._model.state_dict().items()}


@pytest.mark.parametrize("combine,n_mixed,width_in", [("concat", 2, 8 + 12), ("mix", 3, 12)])
def test_listener_concatenates_glove_or_mixes_all_layers(model_dir, combine, n_mixed, width_in):
    nlp, examples, optimizer = build(model_dir, combine)
    tok2vec = nlp.get_pipe("tagger").model.get_ref("tok2vec")
    linear = next(node for node in tok2vec.walk() if node.name == "linear")
    assert linear.get_dim("nI") == width_in  # [GloVe ; CoVe mix] or the 3-layer mix
    before = encoder_state(nlp)
    losses = [nlp.update(examples, sgd=optimizer, losses={})["tagger"] for _ in range(25)]
    assert losses[-1] < 0.9 * losses[0]
    mix = layer_weights(tok2vec.get_ref("layer_mix"))
    assert len(mix["weights"]) == n_mixed and mix["gamma"] != 1.0
    assert all(torch.equal(v, encoder_state(nlp)[k]) for k, v in before.items())


def test_unfrozen_cove_fine_tunes_the_lstm_but_not_glove(model_dir):
    nlp, examples, optimizer = build(model_dir, frozen=False)
    before = encoder_state(nlp)
    for _ in range(2):
        nlp.update(examples, sgd=optimizer, losses={})
    after = encoder_state(nlp)
    assert torch.equal(before["source_vectors"], after["source_vectors"])
    assert all(not torch.equal(before[k], after[k]) for k in before if k.startswith("encoder."))


def test_replace_listeners_gives_a_private_cove(model_dir, tmp_path):
    nlp, examples, optimizer = build(model_dir)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    expected = [t.tag_ for t in nlp("I like blue ham")]
    nlp.replace_listeners("cove", "tagger", ["model.tok2vec"])
    config = nlp.get_pipe_config("tagger")["model"]["tok2vec"]
    assert config["@architectures"] == "spacy-contextual.CoveTok2Vec.v1" and config["combine"] == "concat"
    nlp.remove_pipe("cove")
    assert [t.tag_ for t in nlp("I like blue ham")] == expected
    nlp.to_disk(tmp_path / "private")
    assert [t.tag_ for t in spacy.load(tmp_path / "private")("I like blue ham")] == expected


def test_doc_words_from_other_tokenizations(model_dir):
    nlp = make_nlp(model_dir)
    doc = nlp(Doc(nlp.vocab, words=["The", "BANK", "river"]))
    lower = nlp(Doc(nlp.vocab, words=["the", "bank", "river"]))
    np.testing.assert_allclose(doc._.cove_data.layers, lower._.cove_data.layers)  # looked up lowercased


def test_missing_bundled_cove_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(resolver, "ASSETS", tmp_path)  # an installation without its assets
    nlp = spacy.blank("en")
    nlp.add_pipe("cove")
    with pytest.raises(FileNotFoundError, match="the bundled CoVe model is missing from .*give the folder"):
        nlp.initialize()
