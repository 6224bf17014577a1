"""The ElmoEmbedder API: batching, ordering, determinism, odd input, and agreement with the biLM."""

import numpy as np
import pytest
import torch
from util import tiny_bilm

from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.kinds import kind_name
from spacy_contextual.models.chars import batch_to_ids, remove_sentence_boundaries


@pytest.fixture
def embedder():
    return ElmoEmbedder(tiny_bilm(), max_batch_tokens=64)


def test_matches_allennlp_embedder(tiny_anchor):
    root, meta, ref = tiny_anchor
    embedder = ElmoEmbedder.from_bilm_tf(root / "options.json", root / "weights.hdf5")
    for k, batch in enumerate(meta["batches"]):
        for row, (sentence, layers) in enumerate(
            zip(batch, embedder.embed_sentences(batch, batch_size=2), strict=True)
        ):
            assert layers.shape == (3, len(sentence), 32) and layers.dtype == np.float32
            np.testing.assert_allclose(
                layers, ref[f"stateless/b{k}/embedder_acts"][row, :, : len(sentence)], atol=1e-5, rtol=1e-5
            )


def test_stateful_batches_match_allennlp(tiny_anchor):
    root, meta, ref = tiny_anchor
    embedder = ElmoEmbedder.from_bilm_tf(root / "options.json", root / "weights.hdf5", stateful=True)
    for k, batch in enumerate(meta["batches"]):
        for row, (sentence, layers) in enumerate(zip(batch, embedder.embed_batch(batch), strict=True)):
            expected = ref[f"stateful/b{k}/act2"][row, 1 : len(sentence) + 1]
            np.testing.assert_allclose(layers[2], expected, atol=1e-5, rtol=1e-5)


def test_same_vectors_alone_and_in_any_batch(embedder):
    sentences = [["a", "b", "c"], ["The", "river", "bank", "."], ["x"] * 30, ["one"], ["The", "bank", "."]] * 3
    together = embedder.embed_sentences(sentences, batch_size=4)
    reversed_order = embedder.embed_sentences(sentences[::-1], batch_size=7)[::-1]
    for sentence, a, b in zip(sentences, together, reversed_order, strict=True):
        alone = embedder.embed_sentence(sentence)
        np.testing.assert_allclose(a, alone, atol=1e-6)
        np.testing.assert_allclose(b, alone, atol=1e-6)


def test_agrees_with_the_bilm_forward(embedder):
    sentences = [["Hello", "world"], ["naïve", "café", "東京", "🙂"], ["y" * 60, "<S>", "</S>"]]
    with torch.no_grad():
        activations, mask = embedder.bilm(batch_to_ids(sentences))
    stacked = torch.stack([remove_sentence_boundaries(a, mask)[0] for a in activations], 1).numpy()
    for row, layers in enumerate(embedder.embed_sentences(sentences)):
        np.testing.assert_allclose(layers, stacked[row, :, : len(sentences[row])], atol=1e-6)


def test_odd_input(embedder):
    assert embedder.embed_sentences([]) == []
    out = embedder.embed_sentences([[], ["a"], []])
    assert [o.shape for o in out] == [(3, 0, 32), (3, 1, 32), (3, 0, 32)]
    long_sentence = [f"w{i % 97}" for i in range(5000)]
    (layers,) = embedder.embed_sentences([long_sentence])
    assert layers.shape == (3, 5000, 32) and np.isfinite(layers).all()
    # a literal <S> token is the boundary token, as in bilm-tf and AllenNLP
    s = embedder.embed_sentence(["<S>"])
    assert s.shape == (3, 1, 32)


def test_token_cache_is_bounded(embedder):
    embedder.token_cache_size = 10
    embedder.embed_sentences([[f"w{i}" for i in range(50)]])
    assert len(embedder.token_cache) == 10 and embedder.token_cache.max_size == 10
    embedder.embed_sentences([["a"]])
    assert len(embedder.token_cache) == 10 and "a" in embedder.token_cache


def test_iter_embed_streams_in_input_order(embedder):
    def sentences():
        for i in range(300):
            yield ["tok"] * (i % 7 + 1)

    lengths = [layers.shape[1] for layers in embedder.iter_embed(sentences(), batch_size=8, chunk_batches=4)]
    assert lengths == [i % 7 + 1 for i in range(300)]


@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_default_model_missing_gives_clear_error(monkeypatch, tmp_path, kind):
    from spacy_contextual.embedders import load_encoder
    from spacy_contextual.hub import resolver

    monkeypatch.setattr(resolver, "ASSETS", tmp_path / "none")
    with pytest.raises(FileNotFoundError, match=f"the bundled {kind_name(kind)} model is missing"):
        load_encoder(kind)


def test_model_path_that_is_not_a_directory_is_named(tmp_path):
    from spacy_contextual.embedders import load_encoder

    with pytest.raises(
        FileNotFoundError, match="'.{60,}…' is not a model name or folder; `spacy-contextual models` lists"
    ):
        load_encoder("elmo", "x" * 5000)  # too long for the file system: still a clear message, quoted short


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(exact_cuda):
    bilm = tiny_bilm()
    sentences = [["The", "bank", "."], ["a"] * 12]
    cpu = ElmoEmbedder(bilm).embed_sentences(sentences)
    gpu = ElmoEmbedder(tiny_bilm(), device="cuda").embed_sentences(sentences)
    for a, b in zip(cpu, gpu, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)
