"""The ``elmo`` component: Doc data, segmentation, determinism, serialization, vector hooks, loaders."""

from __future__ import annotations

import numpy as np
import pytest
import spacy
import srsly
import torch
from safetensors.torch import load as load_safetensors
from spacy.tokens import Doc, DocBin
from util import tiny_bilm

from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.hub import resolver
from spacy_contextual.layers import elmo_bilm_tf_loader, elmo_model_dir_loader
from spacy_contextual.pipeline import ContextualData, set_vector_hooks

torch.set_num_threads(1)
TEXT = "The bank raised its rates. We sat on the river bank."


def make_nlp(model_dir, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=config)
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(str(model_dir)))
    return nlp


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_bilm(tiny_bilm(), tmp_path_factory.mktemp("elmo") / "tiny")


@pytest.fixture(scope="module")
def nlp(model_dir):
    return make_nlp(model_dir)


def test_factory_is_registered_by_entry_point():
    assert "elmo" in spacy.registry.factories
    assert spacy.registry.architectures.get("spacy-contextual.ElmoListener.v1")


def test_layers_shape_and_values_match_the_embedder(nlp, model_dir):
    doc = nlp(TEXT)
    data = doc._.elmo_data
    assert isinstance(data, ContextualData)
    assert data.layers.shape == (3, len(doc), 32) and data.layers.dtype == np.float32
    assert data.layer_names == ["token", "lstm1", "lstm2"]
    words = [t.text for t in doc]  # no sentence boundaries, no line breaks: one segment
    expected = ElmoEmbedder.load(model_dir).embed_sentences([words])[0]
    np.testing.assert_allclose(data.layers, expected, atol=1e-5)


def test_whitespace_tokens_get_zero_rows_and_are_not_fed(nlp):
    spaced = nlp("The bank  raised its rates.")
    plain = nlp("The bank raised its rates.")
    assert spaced[2].is_space
    assert not spaced._.elmo_data.layers[:, 2].any()
    kept = [i for i, t in enumerate(spaced) if not t.is_space]
    np.testing.assert_allclose(spaced._.elmo_data.layers[:, kept], plain._.elmo_data.layers, atol=1e-6)


def test_empty_doc(nlp):
    doc = nlp("")
    assert doc._.elmo_data.layers.shape == (3, 0, 32)
    assert list(nlp.pipe(["", "a b", ""]))[1]._.elmo_data.layers.shape == (3, 2, 32)


def test_same_vectors_alone_and_in_any_batch(nlp):
    alone = nlp(TEXT)._.elmo_data.layers
    texts = ["x " * 40, TEXT, "A short one.", "", TEXT + " And more words follow here."]
    batched = list(nlp.pipe(texts, batch_size=5))
    np.testing.assert_allclose(batched[1]._.elmo_data.layers, alone, atol=1e-6)


def test_long_doc_split_by_sentence_when_boundaries_exist(model_dir):
    nlp = make_nlp(model_dir)
    nlp.add_pipe("sentencizer", first=True)
    doc = nlp(TEXT)
    sents = list(doc.sents)
    assert len(sents) == 2
    for sent in sents:
        alone = nlp(sent.text)._.elmo_data.layers  # one sentence: the same segment
        np.testing.assert_allclose(doc._.elmo_data.layers[:, sent.start : sent.end], alone, atol=1e-6)


def test_long_doc_without_boundaries_is_windowed(model_dir):
    nlp = make_nlp(model_dir, model={"window": 8, "max_batch_tokens": 64})
    words = [f"w{i % 13}" for i in range(21)]
    doc = nlp(Doc(nlp.vocab, words=words))
    for start in (0, 8, 16):
        piece = nlp(Doc(nlp.vocab, words=words[start : start + 8]))._.elmo_data.layers
        np.testing.assert_allclose(doc._.elmo_data.layers[:, start : start + 8], piece, atol=1e-6)


def test_line_breaks_end_segments_without_sentence_boundaries(nlp):
    doc = nlp("The bank raised rates .\nWe sat on the bank .")
    first = nlp("The bank raised rates .")._.elmo_data.layers
    np.testing.assert_allclose(doc._.elmo_data.layers[:, :5], first, atol=1e-6)


def test_doc_bytes_and_docbin_keep_the_data(nlp):
    doc = nlp(TEXT)
    with pytest.warns(UserWarning, match="W109"):  # spaCy: user hooks are not serialized
        restored = Doc(nlp.vocab).from_bytes(doc.to_bytes())
    assert restored._.elmo_data == doc._.elmo_data
    doc_bin = DocBin(store_user_data=True, docs=[doc, nlp("Other text.")])
    docs = list(DocBin().from_bytes(doc_bin.to_bytes()).get_docs(nlp.vocab))
    assert docs[0]._.elmo_data == doc._.elmo_data
    set_vector_hooks(docs[0])  # hooks are functions: put back after deserialization
    np.testing.assert_allclose(docs[0][1].vector, doc[1].vector)


@pytest.mark.integration
def test_multiprocessing_gives_the_same_data(nlp):
    texts = [TEXT, "Another sentence here.", "", "Bank bank bank."]
    single = [d._.elmo_data for d in nlp.pipe(texts)]
    multi = [d._.elmo_data for d in nlp.pipe(texts, n_process=2, batch_size=2)]
    for a, b in zip(single, multi, strict=True):
        np.testing.assert_allclose(a.layers, b.layers, atol=1e-6)


def test_to_disk_and_load_gives_the_same_vectors_self_contained(tmp_path):
    model_dir = save_bilm(tiny_bilm(seed=3), tmp_path / "weights")
    nlp = make_nlp(model_dir)
    expected = nlp(TEXT)._.elmo_data.layers
    nlp.to_disk(tmp_path / "pipeline")
    for path in model_dir.iterdir():  # the pipeline must not need the source weights
        path.unlink()
    loaded = spacy.load(tmp_path / "pipeline")
    assert np.abs(loaded(TEXT)._.elmo_data.layers - expected).max() <= 1e-6
    # the weights inside the component are safetensors (no pickle), next to the biLM config
    model_msg = srsly.msgpack_loads((tmp_path / "pipeline" / "elmo" / "model").read_bytes())
    shim_msg = srsly.msgpack_loads(next(s for shims in model_msg["shims"] for s in shims))
    assert shim_msg["config"]["bilm"]["projection_dim"] == 16
    assert set(load_safetensors(shim_msg["state"])) == set(tiny_bilm().state_dict())
    nlp2 = spacy.blank("en")
    nlp2.add_pipe("elmo")
    nlp2.from_bytes(nlp.to_bytes())
    np.testing.assert_array_equal(nlp2(TEXT)._.elmo_data.layers, expected)


def test_store_options_doc_tensor_and_vector_layer(model_dir):
    full = make_nlp(model_dir)(TEXT)._.elmo_data
    mixed = make_nlp(model_dir, store="mixed", set_doc_tensor=True)(TEXT)
    assert mixed._.elmo_data.layers.shape == (1, len(mixed), 32)
    np.testing.assert_allclose(mixed._.elmo_data.layers[0], full.layers.mean(0), atol=1e-6)
    np.testing.assert_allclose(mixed.tensor, full.layers.mean(0), atol=1e-6)
    top = make_nlp(model_dir, store="none", set_doc_tensor=True, vector_layer=-1)(TEXT)
    assert top._.elmo_data is None
    np.testing.assert_allclose(top[1].vector, full.layers[-1][1], atol=1e-6)
    with pytest.raises(ValueError, match="store"):
        make_nlp(model_dir, store="everything")
    with pytest.raises(ValueError, match="vector_hooks"):
        make_nlp(model_dir, store="none")


def test_vector_hooks_are_contextual(nlp):
    doc = nlp(TEXT)
    bank1, bank2 = doc[1], doc[-2]
    assert bank1.text == bank2.text == "bank"
    np.testing.assert_allclose(bank1.vector, doc._.elmo_data.layers[:, 1].mean(0), atol=1e-6)
    assert bank1.similarity(bank2) < 0.9999  # spaCy's default would say 1.0 for the same word
    assert abs(bank1.similarity(bank1) - 1.0) < 1e-5
    assert doc.vector.shape == (32,) and doc[0:3].vector.shape == (32,)
    assert -1.0 <= doc[0:3].similarity(doc) <= 1.0
    assert doc[1].has_vector
    spaced = nlp("a  b")
    assert not spaced[1].has_vector and spaced[1].similarity(spaced[0]) == 0.0


def test_uninitialized_component_says_what_to_do():
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    with pytest.raises(ValueError, match="initialize"):
        nlp("Some text")


def test_missing_bundled_model_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(resolver, "ASSETS", tmp_path)  # an installation without its assets
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    with pytest.raises(FileNotFoundError, match="the bundled ELMo model is missing from .*give the folder"):
        nlp.initialize()


def _anchor_docs(vocab, batch):
    return [Doc(vocab, words=words) for words in batch]


def test_bilm_tf_loader_matches_allennlp_reference(tiny_anchor):
    root, meta, ref = tiny_anchor
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.get_pipe("elmo").initialize(loader=elmo_bilm_tf_loader(str(root / "options.json"), str(root / "weights.hdf5")))
    for k, batch in enumerate(meta["batches"]):
        for row, doc in enumerate(nlp.pipe(_anchor_docs(nlp.vocab, batch))):
            expected = ref[f"stateless/b{k}/embedder_acts"][row][:, : len(doc)]
            np.testing.assert_allclose(doc._.elmo_data.layers, expected, atol=1e-5)


def test_stateful_component_reproduces_the_reference_states(tiny_anchor):
    root, meta, ref = tiny_anchor
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": {"stateful": True}})
    elmo = nlp.get_pipe("elmo")
    elmo.initialize(loader=elmo_bilm_tf_loader(str(root / "options.json"), str(root / "weights.hdf5")))
    for k, batch in enumerate(meta["batches"]):  # one reference batch = one encoder batch, rows in order
        docs = _anchor_docs(nlp.vocab, batch)
        layers = elmo.predict(docs)
        for row, (doc, doc_layers) in enumerate(zip(docs, layers, strict=True)):
            for j in range(3):
                np.testing.assert_allclose(
                    doc_layers[j], ref[f"stateful/b{k}/act{j}"][row, 1 : len(doc) + 1], atol=1e-5
                )


def test_initialize_through_the_config_loader(tiny_model_dir):
    config = {
        "nlp": {"lang": "en", "pipeline": ["elmo"]},
        "components": {"elmo": {"factory": "elmo"}},
        "initialize": {
            "components": {
                "elmo": {"loader": {"@misc": "spacy-contextual.ElmoModelDir.v1", "path": str(tiny_model_dir)}}
            }
        },
    }
    nlp = spacy.util.load_model_from_config(
        spacy.util.load_config_from_str(spacy.util.Config(config).to_str()), auto_fill=True
    )
    nlp.initialize()
    assert nlp("A test.")._.elmo_data.layers.shape == (3, 3, 32)


SENSES = {
    "bank": (
        [
            "I deposited the money at the bank yesterday.",
            "The bank approved my loan application.",
            "She works as a teller at the bank downtown.",
        ],
        [
            "We had a picnic on the grassy bank of the river.",
            "The boat drifted toward the muddy bank.",
            "Fish swam near the river bank.",
        ],
    ),
    "play": (
        ["The children play football in the park.", "They play tennis every weekend.", "We play games after dinner."],
        [
            "We went to see a play at the theatre.",
            "The play was written by Shakespeare.",
            "The actors rehearsed the new play.",
        ],
    ),
}


@pytest.mark.parametrize("word", sorted(SENSES))
def test_bundled_model_similarity_follows_senses(word):
    """token.similarity (the vector hook) is higher within a sense than across senses, on average."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.initialize()
    first, second = ([next(t for t in nlp(text) if t.text == word) for text in texts] for texts in SENSES[word])
    within = [a.similarity(b) for group in (first, second) for i, a in enumerate(group) for b in group[i + 1 :]]
    across = [a.similarity(b) for a in first for b in second]
    assert sum(within) / len(within) > sum(across) / len(across)


def _cupy_gpu() -> bool:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cupy_gpu(), reason="needs CUDA and CuPy (spaCy's GPU ops)")
def test_component_follows_spacy_onto_the_gpu(model_dir, exact_cuda):
    from thinc.api import NumpyOps, set_current_ops

    expected = make_nlp(model_dir)(TEXT)._.elmo_data.layers
    spacy.require_gpu()
    try:
        nlp = make_nlp(model_dir)
        assert nlp.get_pipe("elmo").model.shims[0].device.type == "cuda"
        layers = nlp(TEXT)._.elmo_data.layers
        assert type(layers).__module__.startswith("cupy")
        np.testing.assert_allclose(layers.get(), expected, atol=1e-4)
        doc = nlp(TEXT)
        stored = Doc(nlp.vocab).from_bytes(doc.to_bytes())._.elmo_data  # back with numpy data
        assert type(stored.layers).__module__ == "numpy" and stored == doc._.elmo_data
    finally:
        set_current_ops(NumpyOps())
