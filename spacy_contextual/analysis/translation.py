"""One English sentence through a CoVe MT model, ready to audit: the German tokens, the decoder's
attention α (target × source), which source words are out of the vocabulary (read as ``<unk>``) and,
for every ``<unk>`` the model wrote, which source word was copied in its place (the most-attended one,
Luong et al. 2015) so that the page can say so."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..embedders import Embedder
from ..mt_text import UNK, detokenize, tokenize
from .occurrences import InputError

MAX_SOURCE_CHARS = 400
MAX_SOURCE_TOKENS = 60


@dataclass
class Translation:
    source: list[str]  # the English tokens as the model read them (lowercased)
    tokens: list[str]  # the German tokens, each <unk> replaced by its copied source word
    attention: np.ndarray  # (target, source), rows sum to 1
    unknown_source: list[int]  # source positions outside the vocabulary
    copied: dict[int, int]  # target position of a written <unk> -> the source position copied there

    @property
    def text(self) -> str:
        return detokenize(self.tokens)

    @property
    def unknown_target(self) -> list[int]:
        return sorted(self.copied)

    def copy_notes(self) -> list[str]:
        """ "'zebra' (German token 3) copied from the English 'zebra' (token 5)", one per <unk> written."""
        return [
            f"'{self.tokens[t]}' (German token {t + 1}) copied from the English '{self.source[j]}' (token {j + 1})"
            for t, j in sorted(self.copied.items())
        ]


def source_tokens(sentence: str) -> list[str]:
    """The sentence as the model will read it; an empty or too long one is refused with the limit."""
    sentence = sentence.strip()
    if not sentence:
        raise InputError("The sentence is empty: type an English sentence to translate.")
    if len(sentence) > MAX_SOURCE_CHARS:
        raise InputError(
            f"The sentence has {len(sentence):,} characters; the limit is {MAX_SOURCE_CHARS}. Translate one sentence "
            "at a time."
        )
    tokens = tokenize(sentence)
    if len(tokens) > MAX_SOURCE_TOKENS:
        raise InputError(
            f"The sentence has {len(tokens)} tokens; the limit is {MAX_SOURCE_TOKENS}. Translate one sentence at a "
            "time."
        )
    return tokens


def translate(encoder: Embedder, sentence: str, beam: int = 1) -> Translation:
    """Greedy (beam = 1) or beam search, at most 2 n + 10 target tokens for n source tokens."""
    n = len(source_tokens(sentence))
    raw = encoder.translate([sentence.strip()], beam=beam, max_length=2 * n + 10, replace_unk=False)[0]
    attention = np.asarray(raw.attention, dtype=np.float32)
    copied = {t: int(attention[t].argmax()) for t, token in enumerate(raw.tokens) if token == UNK}
    tokens = [raw.source[copied[t]] if t in copied else token for t, token in enumerate(raw.tokens)]
    unknown = [j for j, token in enumerate(raw.source) if token not in encoder.vocab.index]
    return Translation(list(raw.source), tokens, attention, unknown, copied)
