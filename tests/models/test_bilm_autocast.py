"""The biLM under autocast, on every way into it: ``forward`` on char ids (the char CNN on every
position) and ``encode_sentences`` with the token cache on and off, with and without gradients.

bf16 autocast on the CPU stands in for fp16 autocast on CUDA: the same ops are lowered, so dtype
mismatches show up here as they would on a GPU. Outputs stay close to float32 and differ from it
(the autocast really ran); gradients reach every parameter."""

import pytest
import torch
from util import tiny_bilm

from spacy_contextual.models.chars import batch_to_ids
from spacy_contextual.models.token_cache import TokenVectorCache

SENTENCES = [["The", "bank", "closed", "."], ["Rivers", "flood"], ["naïve", "café", "🙂"]]


def bf16():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def assert_close_but_lowered(lowered, exact):
    assert len(lowered) == len(exact)
    for low, full in zip(lowered, exact, strict=True):
        assert low.shape == full.shape
        torch.testing.assert_close(low.float(), full, atol=0.05 * float(full.abs().max()), rtol=0)
    assert any(not torch.equal(low.float(), full) for low, full in zip(lowered, exact, strict=True))


def run(bilm, how: str, cache_size: int):
    if how == "char_ids":
        return bilm(batch_to_ids(SENTENCES)).activations
    return bilm.encode_sentences(SENTENCES, TokenVectorCache(cache_size)).activations


WAYS = [("char_ids", 0), ("sentences", 0), ("sentences", 1000)]


@pytest.mark.parametrize("how, cache_size", WAYS, ids=["forward", "no-token-cache", "token-cache"])
def test_inference_under_autocast(how, cache_size):
    bilm = tiny_bilm()
    with torch.no_grad():
        exact = run(bilm, how, cache_size)
        with bf16():
            lowered = run(bilm, how, cache_size)
    assert_close_but_lowered(lowered, exact)


@pytest.mark.parametrize("how, cache_size", WAYS, ids=["forward", "no-token-cache", "token-cache"])
def test_gradients_under_autocast(how, cache_size):
    """The fine-tuning path (``frozen = false``) and biLM training: the CNN is not frozen, gradients flow."""
    bilm = tiny_bilm().train()
    with bf16():
        activations = run(bilm, how, cache_size)
        loss = sum(a.float().pow(2).sum() for a in activations)
    loss.backward()
    for name, parameter in bilm.named_parameters():
        assert parameter.grad is not None and parameter.grad.dtype == torch.float32, name
        assert torch.isfinite(parameter.grad).all(), name
    assert float(bilm.token_encoder.convolutions[0].weight.grad.abs().sum()) > 0


def test_stateful_state_stays_in_the_weights_dtype_under_autocast():
    bilm = tiny_bilm()
    bilm.stateful = True
    with torch.no_grad(), bf16():
        bilm.encode_sentences(SENTENCES)
        bilm.encode_sentences(SENTENCES[:1])
    assert all(state.dtype == torch.float32 for state in bilm.states)


def test_carried_state_moves_with_the_module():
    bilm = tiny_bilm()
    bilm.stateful = True
    with torch.no_grad():
        bilm.encode_sentences(SENTENCES)
    rows = bilm.states[0].shape[1]
    bilm.double()
    assert all(state.dtype == torch.float64 for state in bilm.states)
    bilm.to("meta")  # stands in for another device (a GPU)
    assert all(state.device.type == "meta" and state.shape[1] == rows for state in bilm.states)
    assert "carried_h" not in bilm.state_dict()  # not part of the weights
