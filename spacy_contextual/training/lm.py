"""The biLM training objective (Peters et al. 2018, eq. 1: the sum of the forward and backward
log likelihoods).

For ``<S> t_1 .. t_N </S>`` and the biLM's top layer ``[fwd_k; bwd_k]`` at every position k:

    L_forward  = - sum_{k=0..N}   log p(t_{k+1} | fwd_k)       (t_{N+1} = </S>)
    L_backward = - sum_{k=1..N+1} log p(t_{k-1} | bwd_k)       (t_0     = <S>)
    loss       = L_forward + L_backward

Both directions share the char-CNN token encoder and one softmax over the vocabulary (an adaptive
softmax, Grave et al. 2017, or bilm-tf's sampled softmax); the LSTM stacks are separate (they are
the biLM's forward/backward layers). Perplexity of a direction = exp(its summed NLL / number of predictions).
Under mixed precision (autocast) the biLM runs in the low precision and the softmax in float32.

With truncated BPTT (``corpus.Windows``) each direction reads its own continuous stream instead
(the backward stream holds every sentence reversed), from the LSTM state carried over from the
previous window, and every position predicts the next token of its stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import torch
from torch import nn

from ..errors import ContextualError
from ..formats.bilm_dir import save_bilm
from ..models.bilm import BiLM
from ..models.token_cache import TokenVectorCache
from .batch_stream import Windows
from .sampled_softmax import SampledSoftmax
from .vocab import LMVocabulary


@dataclass
class SoftmaxConfig:
    """The shared LM softmax: ``kind = "adaptive"`` (``torch.nn.AdaptiveLogSoftmaxWithLoss`` with
    ``cutoffs`` and ``div_value``; cutoffs beyond the vocabulary are dropped) or ``"sampled"``
    (bilm-tf's sampled softmax with ``negatives`` shared negatives, exact full softmax in eval)."""

    cutoffs: list = field(default_factory=lambda: [2000, 10000])
    div_value: float = 4.0
    kind: str = "adaptive"
    negatives: int = 8192

    def to_dict(self) -> dict:
        return asdict(self)


def build_softmax(input_dim: int, vocab_size: int, config: SoftmaxConfig) -> nn.Module:
    if config.kind == "sampled":
        return SampledSoftmax(input_dim, vocab_size, min(config.negatives, vocab_size))
    if config.kind != "adaptive":
        raise ContextualError(f"softmax.kind must be 'adaptive' or 'sampled', got {config.kind!r}")
    cutoffs = [c for c in config.cutoffs if 0 < c < vocab_size - 1]
    if not cutoffs:
        raise ContextualError(
            f"the vocabulary ({vocab_size} words) is too small for the softmax cutoffs {config.cutoffs}"
        )
    return nn.AdaptiveLogSoftmaxWithLoss(input_dim, vocab_size, cutoffs, div_value=config.div_value)


DirectionStates = list  # one (h, c) per LSTM layer of a direction
CarriedStates = tuple  # (forward DirectionStates, backward DirectionStates), detached


class LMLoss(NamedTuple):
    forward_nll: torch.Tensor  # summed over predictions
    backward_nll: torch.Tensor
    predictions: int  # per direction
    states: CarriedStates | None = None  # TBPTT: the final LSTM states, to carry into the next windows

    @property
    def mean(self) -> torch.Tensor:
        """(L_forward + L_backward) per prediction: the training loss."""
        return (self.forward_nll + self.backward_nll) / max(self.predictions, 1)


class BidirectionalLM(nn.Module):
    """A :class:`BiLM` plus the shared softmax: the network that is trained."""

    def __init__(self, bilm: BiLM, vocab: LMVocabulary, softmax_config: SoftmaxConfig, dropout: float = 0.0):
        super().__init__()
        self.bilm = bilm
        self.vocab = vocab
        self.softmax_config = softmax_config
        self.softmax = build_softmax(bilm.config.projection_dim, len(vocab), softmax_config)
        self.dropout = nn.Dropout(dropout)

    def save(self, path, dtype: torch.dtype | None = None, info: dict | None = None):
        """Our model directory with the softmax and vocabulary (loadable by ``load_language_model``)."""
        info = {**(info or {}), "softmax": self.softmax_config.to_dict()}
        return save_bilm(
            self.bilm, path, softmax=self.softmax.state_dict(), vocab=self.vocab.words, dtype=dtype, info=info
        )

    def forward(self, batch: Sequence[Sequence[str]] | Windows, states: CarriedStates | None = None) -> LMLoss:
        """The loss of a sentence batch (from zero state) or of TBPTT windows (from ``states``)."""
        if isinstance(batch, Windows):
            return self._windows_loss(batch, states)
        return self._sentences_loss(batch)

    def _sentences_loss(self, sentences: Sequence[Sequence[str]]) -> LMLoss:
        device = self.bilm.token_encoder.char_embedding.weight.device
        activations, mask = self.bilm.encode_sentences(sentences)
        top = activations[-1]
        P = self.bilm.config.projection_dim
        word_ids = torch.zeros(mask.shape, dtype=torch.long)
        for row, sentence in enumerate(sentences):
            encoded = self.vocab.encode(sentence)
            word_ids[row, : len(encoded)] = torch.tensor(encoded)
        word_ids = word_ids.to(device)
        predicting = mask[:, 1:]  # position k predicts k+1 (forward) / position k+1 predicts k (backward)
        forward_out = self.dropout(top[:, :-1, :P][predicting])
        backward_out = self.dropout(top[:, 1:, P:][predicting])
        forward_nll = self._nll(forward_out, word_ids[:, 1:][predicting])
        backward_nll = self._nll(backward_out, word_ids[:, :-1][predicting])
        return LMLoss(forward_nll, backward_nll, int(predicting.sum()))

    def _windows_loss(self, windows: Windows, states: CarriedStates | None) -> LMLoss:
        device = self.bilm.token_encoder.char_embedding.weight.device
        P = self.bilm.config.projection_dim
        streams = (windows.forward, windows.backward)
        inputs = [window[:-1] for stream in streams for window in stream]
        vectors, _ = TokenVectorCache(0).token_vectors(self.bilm.token_encoder, inputs, boundaries=False)
        tokens = vectors.split(len(windows.forward))
        lengths = torch.full((len(windows.forward),), tokens[0].shape[1], device=device)
        nlls, finals = [], []
        layer_stacks = (self.bilm.forward_layers, self.bilm.backward_layers)
        for layers, stream, vectors, carried in zip(layer_stacks, streams, tokens, states or (None, None), strict=True):
            outputs, final = self.bilm.run_direction(layers, vectors, lengths, carried)
            targets = torch.tensor([[self.vocab[w] for w in window[1:]] for window in stream], device=device)
            nlls.append(self._nll(self.dropout(outputs[-1].reshape(-1, P)), targets.reshape(-1)))
            finals.append([(h.detach(), c.detach()) for h, c in final])
        return LMLoss(nlls[0], nlls[1], int(lengths.sum()), tuple(finals))

    def _nll(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Summed -log p(target | hidden): the softmax and the sum in float32, also under autocast."""
        with torch.autocast(hidden.device.type, enabled=False):
            return -self.softmax(hidden.float(), targets).output.sum()

    def set_dropout(self, rate: float) -> None:
        """Dropout on the LSTM inputs (the biLM's) and on the top layer before the softmax."""
        self.bilm.dropout.p = rate
        self.dropout.p = rate
