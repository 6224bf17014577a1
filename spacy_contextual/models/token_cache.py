"""The char-CNN token vectors x_k of tokenised sentences, the CNN run once per distinct word: the one
place that does so (``ElmoEmbedder``, the ``elmo`` component and biLM training all come here).

``token_vectors`` gives ``BiLM.encode``'s input, (B, T+2, P) with the token encoder's
``boundary_tokens`` (<S>/</S> for bilm-tf's char CNN) around every sentence
(or (B, T, P) as given, ``boundaries=False``), zero at padding, plus the mask. Within a batch each
distinct word goes through the CNN once. Across batches, an LRU cache of ``max_size`` words keeps
their vectors while no gradient can reach the CNN (no_grad, or its parameters frozen); while
gradients flow, nothing is stored. The cached vectors are copied into one table of at most
``max_size`` rows, so the cache holds that much memory (on the CNN's device) and no more. Owners
``clear()`` it when they change the weights; it also clears itself when the CNN's parameter
tensors, device, dtype, in-place version or the autocast setting change. ``max_size = 0``: no
cache, only the per-batch sharing. A token encoder takes bilm-tf's character ids (``chars.py``)
unless it gives its own input rows for a list of words (``token_ids(words)``) and names its own
sentence boundaries (``boundary_tokens``).
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
        self._rows: OrderedDict[str, int] = OrderedDict()  # word -> its row of _table, least recently used first
        self._table: torch.Tensor | None = None  # (capacity, P), capacity <= max_size: the cached vectors
        self._free: list[int] = []  # rows of _table that hold no word
        self._signature: Hashable = None

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, word: str) -> bool:
        return word in self._rows

    def clear(self) -> None:
        self._rows.clear()
        self._table = None
        self._free = []
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
        bos, eos = getattr(token_encoder, "boundary_tokens", (BOS_TOKEN, EOS_TOKEN))
        vocabulary = list(dict.fromkeys(word for sentence in sentences for word in sentence))
        if boundaries:
            vocabulary += [w for w in (bos, eos) if w not in vocabulary]
        if self.applies(token_encoder) and self.max_size > 0:
            table = self._lookup(token_encoder, vocabulary, dtype)
        else:
            table = token_encoder(token_ids(token_encoder, vocabulary).to(device)).to(dtype)
        table = torch.cat([table.new_zeros(1, table.shape[1]), table])  # row 0: padding
        row_of = {word: row for row, word in enumerate(vocabulary, 1)}
        extra = 2 if boundaries else 0
        index = torch.zeros(len(sentences), max(len(s) for s in sentences) + extra, dtype=torch.long)
        for row, sentence in enumerate(sentences):
            words = (bos, *sentence, eos) if boundaries else sentence
            index[row, : len(words)] = torch.tensor([row_of[w] for w in words], dtype=torch.long)
        index = index.to(device)
        return table[index], index > 0

    def _lookup(self, token_encoder: nn.Module, vocabulary: list[str], dtype: torch.dtype) -> torch.Tensor:
        """The vectors of ``vocabulary`` (a new tensor), the CNN run on the words not cached yet."""
        signature = self._weights_signature(token_encoder)
        if signature != self._signature:
            self.clear()
            self._signature = signature
        device = next(token_encoder.parameters()).device
        hits = [w for w in vocabulary if w in self._rows]
        missing = [w for w in vocabulary if w not in self._rows]
        parts = []
        if hits:
            parts.append(self._table[torch.tensor([self._rows[w] for w in hits], device=device)])
        if missing:
            with torch.no_grad():
                computed = token_encoder(token_ids(token_encoder, missing).to(device)).to(dtype)
            parts.append(computed)
        source = {word: i for i, word in enumerate(hits + missing)}
        table = torch.cat(parts)[torch.tensor([source[w] for w in vocabulary], device=device)]
        for word in hits:
            self._rows.move_to_end(word)
        if missing:
            keep = min(len(missing), self.max_size)
            self._store(missing[-keep:], computed[-keep:])
        return table

    def _store(self, words: list[str], vectors: torch.Tensor) -> None:
        """Copy ``vectors`` into free rows of the table, evicting the least recently used words: the
        cache never holds on to the batch a vector came from."""
        while self._rows and len(self._rows) + len(words) > self.max_size:
            self._free.append(self._rows.popitem(last=False)[1])
        if len(self._free) < len(words):
            self._grow(len(self._rows) + len(words), vectors)
        rows = [self._free.pop() for _ in words]
        self._table[torch.tensor(rows, device=vectors.device)] = vectors
        self._rows.update(zip(words, rows, strict=True))

    def _grow(self, needed: int, like: torch.Tensor) -> None:
        """Room for ``needed`` words: the table at least doubles, up to ``max_size`` rows."""
        capacity = 0 if self._table is None else self._table.shape[0]
        grown = like.new_empty(min(self.max_size, max(needed, 2 * capacity)), like.shape[1])
        if self._table is not None:
            grown[:capacity] = self._table
        self._free.extend(range(grown.shape[0] - 1, capacity - 1, -1))  # pop() hands out the lowest row first
        self._table = grown

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


def token_ids(token_encoder: nn.Module, words: Sequence[str]) -> torch.Tensor:
    """The input rows of ``words`` for ``token_encoder``: its own ``token_ids``, else bilm-tf char ids."""
    own = getattr(token_encoder, "token_ids", None)
    return own(words) if own is not None else batch_to_ids([words])[0]
