"""The biLM training objective (Peters et al. 2018, eq. 1 / design document 001).

For ``<S> t_1 .. t_N </S>`` and the biLM's top layer ``[fwd_k; bwd_k]`` at every position k:

    L_forward  = - sum_{k=0..N}   log p(t_{k+1} | fwd_k)       (t_{N+1} = </S>)
    L_backward = - sum_{k=1..N+1} log p(t_{k-1} | bwd_k)       (t_0     = <S>)
    loss       = L_forward + L_backward

Both directions share the char-CNN token encoder and one softmax over the vocabulary (an adaptive
softmax, Grave et al. 2017); the LSTM stacks are separate (they are the biLM's forward/backward
layers). Perplexity of a direction = exp(its summed NLL / number of predictions).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import NamedTuple, Optional, Sequence

import torch
from torch import nn

from ..formats.bilm_dir import save_bilm
from ..models.bilm import BiLM
from ..models.chars import add_sentence_boundaries, batch_to_ids
from .vocab import Vocabulary


@dataclass
class SoftmaxConfig:
    """``torch.nn.AdaptiveLogSoftmaxWithLoss`` settings; cutoffs beyond the vocabulary are dropped."""

    cutoffs: list = field(default_factory=lambda: [2000, 10000])
    div_value: float = 4.0

    def to_dict(self) -> dict:
        return asdict(self)


def build_softmax(input_dim: int, vocab_size: int, config: SoftmaxConfig) -> nn.AdaptiveLogSoftmaxWithLoss:
    cutoffs = [c for c in config.cutoffs if 0 < c < vocab_size - 1]
    if not cutoffs:
        raise ValueError(f"the vocabulary ({vocab_size} words) is too small for the softmax cutoffs {config.cutoffs}")
    return nn.AdaptiveLogSoftmaxWithLoss(input_dim, vocab_size, cutoffs, div_value=config.div_value)


class LMLoss(NamedTuple):
    forward_nll: torch.Tensor  # summed over predictions
    backward_nll: torch.Tensor
    predictions: int  # per direction

    @property
    def mean(self) -> torch.Tensor:
        """(L_forward + L_backward) per prediction: the training loss."""
        return (self.forward_nll + self.backward_nll) / max(self.predictions, 1)


class BidirectionalLM(nn.Module):
    """A :class:`BiLM` plus the shared softmax: the network that is trained."""

    def __init__(self, bilm: BiLM, vocab: Vocabulary, softmax_config: SoftmaxConfig, dropout: float = 0.0):
        super().__init__()
        self.bilm = bilm
        self.vocab = vocab
        self.softmax_config = softmax_config
        self.softmax = build_softmax(bilm.config.projection_dim, len(vocab), softmax_config)
        self.dropout = nn.Dropout(dropout)

    def save(self, path, dtype: Optional[torch.dtype] = None, info: Optional[dict] = None):
        """Our model directory with the softmax and vocabulary (loadable by ``load_language_model``)."""
        info = {**(info or {}), "softmax": self.softmax_config.to_dict()}
        return save_bilm(self.bilm, path, softmax=self.softmax.state_dict(), vocab=self.vocab.words, dtype=dtype, info=info)

    def forward(self, sentences: Sequence[Sequence[str]]) -> LMLoss:
        device = self.softmax.head.weight.device
        char_ids, mask = add_sentence_boundaries(batch_to_ids(sentences).to(device))
        top = self.bilm.encode(self.bilm.embed_tokens(char_ids), mask).activations[-1]
        P = self.bilm.config.projection_dim
        word_ids = torch.zeros(mask.shape, dtype=torch.long)
        for row, sentence in enumerate(sentences):
            encoded = self.vocab.encode(sentence)
            word_ids[row, : len(encoded)] = torch.tensor(encoded)
        word_ids = word_ids.to(device)
        predicting = mask[:, 1:]  # position k predicts k+1 (forward) / position k+1 predicts k (backward)
        forward_out = self.dropout(top[:, :-1, :P][predicting])
        backward_out = self.dropout(top[:, 1:, P:][predicting])
        forward_nll = -self.softmax(forward_out, word_ids[:, 1:][predicting]).output.sum()
        backward_nll = -self.softmax(backward_out, word_ids[:, :-1][predicting]).output.sum()
        return LMLoss(forward_nll, backward_nll, int(predicting.sum()))

    def set_dropout(self, rate: float) -> None:
        """Dropout on the LSTM inputs (the biLM's) and on the top layer before the softmax."""
        self.bilm.dropout.p = rate
        self.dropout.p = rate
