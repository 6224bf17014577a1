"""The input ids of ELMoForManyLangs (HIT-SCIR) models: a word id and character ids per token.

A sentence is ``<bos> t_1 .. t_n <eos>``. A token longer than ``max_characters - 2`` code points is
cut to its first ``max_characters - 2`` before both lookups (never the boundaries: with
``max_characters`` < 7 the original would also cut a literal "<bos>" inside a sentence, which here
stays a boundary token). Then:

    word id   = words[token] (exact, case-sensitive), else words["<oov>"]
    char ids  = [chars["<eow>"], chars[c_1] .. chars[c_m], chars["<bow>"], chars["<pad>"], ...]

``max_characters`` ids wide, an unknown character giving ``chars["<oov>"]``. The begin and end marks
are swapped on purpose: the original code reads ``bow_id, eow_id = char2id['<eow>'], char2id['<bow>']``
and the published models were trained so. The tokens ``<bos>`` and ``<eos>`` (the boundaries, and the
same strings inside a sentence) are ``[<eow>, chars[token], <bow>, <pad>, ...]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

BOS, EOS, OOV, PAD, BOW, EOW = "<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>"
WORD_SPECIALS = (OOV, PAD)  # the lookups need these; <bos>/<eos> fall back to <oov>
CHAR_SPECIALS = (BOS, EOS, OOV, PAD, BOW, EOW)


@dataclass
class Lexicons:
    """``words`` / ``chars``: key -> embedding row (None for a model without that embedding)."""

    words: dict[str, int] | None
    chars: dict[str, int] | None
    max_characters: int

    @property
    def width(self) -> int:
        """Ids per token: the word id (if any), then the character ids (if any)."""
        return (self.words is not None) + (self.max_characters if self.chars is not None else 0)

    def cut(self, token: str) -> str:
        if len(token) + 2 <= self.max_characters or token in (BOS, EOS):
            return token
        return token[: self.max_characters - 2]

    def word_id(self, token: str) -> int:
        return self.words.get(self.cut(token), self.words[OOV])

    def char_ids(self, token: str) -> list[int]:
        chars, token = self.chars, self.cut(token)
        ids = [chars[PAD]] * self.max_characters
        ids[0] = chars[EOW]
        spelled = [chars[token]] if token in (BOS, EOS) else [chars.get(c, chars[OOV]) for c in token]
        ids[1 : len(spelled) + 1] = spelled
        ids[len(spelled) + 1] = chars[BOW]
        return ids

    def token_ids(self, tokens: Sequence[str]) -> torch.Tensor:
        """(len(tokens), width) int64: per token its word id, then its character ids."""
        rows = [
            ([self.word_id(t)] if self.words is not None else []) + (self.char_ids(t) if self.chars is not None else [])
            for t in tokens
        ]
        return torch.tensor(rows, dtype=torch.long).reshape(len(tokens), self.width)
