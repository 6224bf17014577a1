"""The char-CNN token vectors x_k of tokenised sentences, the CNN run once per distinct word: the one
place that does so (``ElmoEmbedder``, the ``elmo`` component and biLM training all come here).

``token_vectors`` gives ``BiLM.encode``'s input, (B, T+2, P) with <S>/</S> around every sentence
(or (B, T, P) as given, ``boundaries=False``), zero at padding, plus the mask. Within a batch each
distinct word goes through the CNN once. Across batches, an LRU cache of ``max_size`` words keeps
their vectors while no gradient can reach the CNN (no_grad, or its parameters frozen); while
gradients flow, nothing is stored. Owners ``clear()`` it when they change the weights; it also
clears itself when the CNN's parameter tensors, device, dtype, in-place version or the autocast
setting change. ``max_size = 0``: no cache, only the per-batch sharing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence

import torch
from torch import nn

from .chars import BOS_TOKEN, EOS_TOKEN, batch_to_ids


class TokenVectorCache:
    def __init__(self, max_size: int = 50_000):
        self.max_size = max_size
        self._vectors: OrderedDict[str, torch.Tensor] = OrderedDict()
        self._signature: Hashable = None

    def __len__(self) -> int:
        return len(self._vectors)

    def __contains__(self, word: str) -> bool:
        return word in self._vectors

    def clear(self) -> None:
        self._vectors.clear()
        self._signature = None

    @staticmethod
    def applies(token_encoder: nn.Module) -> bool:
        """True when no gradient can flow into ``token_encoder``: the cache may be used."""
        return not torch.is_grad_enabled() or not any(p.requires_grad for p in token_encoder.parameters())

    def token_vectors(
        self, token_encoder: nn.Module, sentences: Sequence[Sequence[str]], boundaries: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Token vectors (B, T+2, P) of ``sentences`` with <S>/</S> added (or (B, T, P) as given) and the mask."""
        parameter = next(token_encoder.parameters())
        device, dtype = parameter.device, parameter.dtype
        vocabulary = list(dict.fromkeys(word for sentence in sentences for word in sentence))
        if boundaries:
            vocabulary += [w for w in (BOS_TOKEN, EOS_TOKEN) if w not in vocabulary]
        if self.applies(token_encoder) and self.max_size > 0:
            table = self._lookup(token_encoder, vocabulary, dtype)
        else:
            table = token_encoder(batch_to_ids([vocabulary])[0].to(device)).to(dtype)
        table = torch.cat([table.new_zeros(1, table.shape[1]), table])  # row 0: padding
        row_of = {word: row for row, word in enumerate(vocabulary, 1)}
        extra = 2 if boundaries else 0
        index = torch.zeros(len(sentences), max(len(s) for s in sentences) + extra, dtype=torch.long)
        for row, sentence in enumerate(sentences):
            words = (BOS_TOKEN, *sentence, EOS_TOKEN) if boundaries else sentence
            index[row, : len(words)] = torch.tensor([row_of[w] for w in words], dtype=torch.long)
        index = index.to(device)
        return table[index], index > 0

    def _lookup(self, token_encoder: nn.Module, vocabulary: list[str], dtype: torch.dtype) -> torch.Tensor:
        signature = self._weights_signature(token_encoder)
        if signature != self._signature:
            self.clear()
            self._signature = signature
        missing = [w for w in vocabulary if w not in self._vectors]
        computed = {}
        if missing:
            device = next(token_encoder.parameters()).device
            with torch.no_grad():
                vectors = token_encoder(batch_to_ids([missing])[0].to(device)).to(dtype)
            computed = dict(zip(missing, vectors, strict=True))
        table = torch.stack([computed[w] if w in computed else self._vectors[w] for w in vocabulary])
        for word in vocabulary:
            if word in computed:
                self._vectors[word] = computed[word]
            else:
                self._vectors.move_to_end(word)
        while len(self._vectors) > self.max_size:
            self._vectors.popitem(last=False)
        return table

    @staticmethod
    def _weights_signature(token_encoder: nn.Module) -> Hashable:
        parameters = list(token_encoder.parameters())
        device_type = parameters[0].device.type
        autocast = torch.is_autocast_enabled(device_type)
        return (
            id(token_encoder),
            autocast and torch.get_autocast_dtype(device_type),
            tuple((id(p), p.data_ptr(), p._version, p.dtype, p.device) for p in parameters),
        )
