"""Sampled softmax (Jean et al. 2015), the way bilm-tf trains its LM softmax.

For a hidden vector h with target word w, S negatives c_1..c_S shared by the whole batch are drawn
(with replacement) from the log-uniform distribution over frequency-sorted word ids,

    Q(k) = log((k + 2) / (k + 1)) / log(V + 1),

and the loss is the softmax cross-entropy over {w} ∪ negatives of the corrected logits

    logit(c) = e_c · h + b_c - log(S · Q(c)),      negatives equal to w are masked (accidental hits).

In eval mode the output is the exact log p(w | h) of the full softmax over all V words.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from ..errors import ContextualError


class SoftmaxOutput(NamedTuple):
    output: torch.Tensor  # log-probability of each target (the sampled estimate while training)


class SampledSoftmax(nn.Module):
    def __init__(self, input_dim: int, vocab_size: int, negatives: int = 8192, eval_chunk: int = 1024):
        super().__init__()
        if negatives < 1:
            raise ContextualError(f"softmax.negatives must be at least 1, got {negatives}")
        self.vocab_size, self.negatives, self.eval_chunk = vocab_size, negatives, eval_chunk
        self.weight = nn.Parameter(torch.randn(vocab_size, input_dim) / math.sqrt(input_dim))
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        ids = torch.arange(vocab_size, dtype=torch.float64)
        log_q = torch.log(torch.log1p(1.0 / (ids + 1)) / math.log(vocab_size + 1))
        self.register_buffer("log_q", log_q.float(), persistent=False)

    def sample(self) -> torch.Tensor:
        """S word ids from Q by inverting its CDF: k = floor(exp(u · log(V + 1))) - 1."""
        u = torch.rand(self.negatives, dtype=torch.float64, device=self.weight.device)
        ids = torch.floor(torch.exp(u * math.log(self.vocab_size + 1))).long() - 1
        return ids.clamp_(0, self.vocab_size - 1)

    def log_prob(self, hidden: torch.Tensor) -> torch.Tensor:
        """Exact log-probabilities over the vocabulary, (N, V)."""
        return torch.log_softmax(nn.functional.linear(hidden, self.weight, self.bias), dim=-1)

    def forward(self, hidden: torch.Tensor, target: torch.Tensor) -> SoftmaxOutput:
        if not self.training:
            rows = [
                self.log_prob(h).gather(1, t[:, None]).squeeze(1)
                for h, t in zip(hidden.split(self.eval_chunk), target.split(self.eval_chunk), strict=True)
            ]
            return SoftmaxOutput(torch.cat(rows) if rows else hidden.new_zeros(0))
        negatives = self.sample()
        correction = math.log(self.negatives)
        true_logit = (hidden * self.weight[target]).sum(-1) + self.bias[target] - (self.log_q[target] + correction)
        noise = hidden @ self.weight[negatives].t() + self.bias[negatives] - (self.log_q[negatives] + correction)
        noise = noise.masked_fill(negatives[None, :] == target[:, None], float("-inf"))
        logits = torch.cat([true_logit[:, None], noise], dim=1)
        return SoftmaxOutput(torch.log_softmax(logits, dim=-1)[:, 0])
