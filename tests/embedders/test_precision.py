"""``autocast_dtype`` on both embedders: ELMo (token cache on and off, stateless and stateful), the CoVe
layers and CoVe translation (greedy and beam). bf16 on the CPU stands in for fp16/bf16 on CUDA; the
arrays stay float32, close to the float32 run, and differ from it (the autocast ran)."""

import numpy as np
import pytest
import torch
from util import tiny_bilm, tiny_cove_dir, tiny_cove_mt_dir

from spacy_contextual.embedders.cove import CoveEmbedder
from spacy_contextual.embedders.elmo import ElmoEmbedder

SENTENCES = [["The", "bank", "closed", "."], ["Rivers", "flood"], [], ["a", "man", "rides", "a", "horse"]]
BF16 = torch.bfloat16


def assert_close_but_lowered(lowered, exact):
    assert len(lowered) == len(exact)
    for low, full in zip(lowered, exact, strict=True):
        assert low.dtype == np.float32 and low.shape == full.shape
        np.testing.assert_allclose(low, full, atol=0.05 * max(float(np.abs(full).max(initial=0)), 1e-3))
    assert any(not np.array_equal(low, full) for low, full in zip(lowered, exact, strict=True))


@pytest.mark.parametrize("token_cache_size", [0, 50_000], ids=["no-token-cache", "token-cache"])
@pytest.mark.parametrize("stateful", [False, True], ids=["stateless", "stateful"])
def test_elmo_under_autocast(token_cache_size, stateful):
    def embed(dtype):
        bilm = tiny_bilm()
        bilm.stateful = stateful
        embedder = ElmoEmbedder(bilm, token_cache_size=token_cache_size, autocast_dtype=dtype)
        return embedder.embed_sentences(SENTENCES, batch_size=2) + embedder.embed_sentences(SENTENCES[:2])

    assert_close_but_lowered(embed(BF16), embed(None))


def test_cove_layers_under_autocast(tmp_path):
    model = tiny_cove_dir(tmp_path / "cove")
    exact = CoveEmbedder.load(model).embed_sentences(SENTENCES)
    assert_close_but_lowered(CoveEmbedder.load(model, autocast_dtype=BF16).embed_sentences(SENTENCES), exact)


@pytest.mark.parametrize("beam", [1, 3], ids=["greedy", "beam"])
def test_cove_translation_under_autocast(tmp_path, beam):
    model = tiny_cove_mt_dir(tmp_path / "mt")
    sentences = ["a man plays a guitar .", "the dog", ""]
    exact = CoveEmbedder.load(model).translate(sentences, beam=beam, max_length=8)
    lowered = CoveEmbedder.load(model, autocast_dtype=BF16).translate(sentences, beam=beam, max_length=8)
    for low, full in zip(lowered, exact, strict=True):
        assert low.tokens == full.tokens and low.source == full.source
        assert low.attention.dtype == np.float32 and low.attention.shape == full.attention.shape
        np.testing.assert_allclose(low.attention, full.attention, atol=0.02)
        np.testing.assert_allclose(low.attention.sum(-1), 1.0, atol=0.02)
    assert not np.array_equal(lowered[0].attention, exact[0].attention)
