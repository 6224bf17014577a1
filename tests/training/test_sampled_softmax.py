"""The sampled softmax: exact full softmax in eval, bilm-tf's corrected sampled estimate in training."""

from __future__ import annotations

import math

import pytest
import torch

from spacy_contextual.training.sampled_softmax import SampledSoftmax


def test_eval_output_is_the_exact_full_softmax_in_chunks():
    torch.manual_seed(0)
    softmax = SampledSoftmax(8, 50, negatives=10, eval_chunk=7).eval()
    hidden, target = torch.randn(23, 8), torch.randint(0, 50, (23,))
    exact = torch.log_softmax(hidden @ softmax.weight.t() + softmax.bias, -1).gather(1, target[:, None]).squeeze(1)
    assert torch.allclose(softmax(hidden, target).output, exact, atol=1e-6)


def test_negatives_follow_the_log_uniform_distribution():
    torch.manual_seed(0)
    softmax = SampledSoftmax(4, 1000, negatives=200_000)
    counts = torch.bincount(softmax.sample(), minlength=1000).double() / 200_000
    expected = torch.tensor([math.log((k + 2) / (k + 1)) / math.log(1001) for k in range(1000)], dtype=torch.double)
    assert torch.allclose(counts[:5], expected[:5], atol=3e-3)
    assert torch.allclose(softmax.log_q.exp().double(), expected, rtol=1e-5)


def test_training_loss_touches_only_the_target_and_sampled_rows_and_masks_accidental_hits():
    torch.manual_seed(0)
    softmax = SampledSoftmax(6, 5000, negatives=16).train()
    hidden, target = torch.randn(4, 6), torch.tensor([4000, 4001, 4002, 4003])
    out = softmax(hidden, target).output
    assert out.shape == (4,) and torch.isfinite(out).all() and (out <= 0).all()
    (-out.sum()).backward()
    touched = set(softmax.weight.grad.abs().sum(-1).nonzero().squeeze(1).tolist())
    assert {4000, 4001, 4002, 4003} <= touched
    assert len(touched) <= 4 + 16

    softmax.zero_grad()
    softmax.sample = lambda: torch.tensor([7, 7, 7])  # every negative equal to the target
    alone = softmax(hidden[:1], torch.tensor([7])).output
    assert torch.allclose(alone, torch.zeros(1), atol=1e-6)  # only the true class is left


def test_sampled_gradient_approaches_the_exact_gradient_with_many_negatives():
    """The corrected sample estimates the partition function, so d loss / d h tends to the full
    softmax's e_w - E_p[e_c] (the loss value itself is shifted by log(S Q(w)), as in TF)."""
    torch.manual_seed(0)
    softmax = SampledSoftmax(8, 300, negatives=200_000)
    target = torch.randint(0, 300, (16,))
    grads = []
    for mode in (softmax.eval, softmax.train):
        mode()
        hidden = torch.randn(16, 8, generator=torch.Generator().manual_seed(1)).requires_grad_()
        softmax(hidden, target).output.sum().backward()
        grads.append(hidden.grad)
    assert torch.allclose(grads[1], grads[0], atol=0.05 * grads[0].abs().max().item())


def test_bad_negatives_are_named():
    with pytest.raises(ValueError, match="softmax.negatives"):
        SampledSoftmax(4, 10, negatives=0)
