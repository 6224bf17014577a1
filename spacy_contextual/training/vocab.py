"""The language-model vocabulary: training words with count >= min_count plus the
specials ``<S>``, ``</S>``, ``<UNK>``; every other word maps to ``<UNK>``.

Words are ordered by descending count (ties alphabetically), after the three specials, so that an
adaptive softmax can put the frequent words in its head cluster.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import ContextualError
from ..models.chars import BOS_TOKEN, EOS_TOKEN
from ..types import PathLike
from ..writer import atomic_file
from .batch_stream import iter_sentences

UNK_TOKEN = "<UNK>"
SPECIALS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)


class LMVocabulary:
    """The biLM softmax vocabulary (``<S>``, ``</S>``, ``<UNK>``, then words by count); the translation
    model's token table is ``mt_text.MTVocab``."""

    def __init__(self, words: Sequence[str]):
        if tuple(words[: len(SPECIALS)]) != SPECIALS:
            raise ContextualError(f"a vocabulary must start with {list(SPECIALS)}, got {list(words[:3])}")
        self.words = list(words)
        self.index = {word: i for i, word in enumerate(self.words)}
        if len(self.index) != len(self.words):
            raise ContextualError("the vocabulary has duplicate words")
        self.bos, self.eos, self.unk = (self.index[s] for s in SPECIALS)

    def __len__(self) -> int:
        return len(self.words)

    def __getitem__(self, word: str) -> int:
        return self.index.get(word, self.unk)

    def encode(self, sentence: Sequence[str]) -> list[int]:
        """Ids of ``<S> sentence </S>``."""
        return [self.bos, *(self.index.get(w, self.unk) for w in sentence), self.eos]

    @classmethod
    def from_counts(cls, counts: Counter, min_count: int = 3) -> LMVocabulary:
        kept = sorted(
            (w for w, c in counts.items() if c >= min_count and w not in SPECIALS), key=lambda w: (-counts[w], w)
        )
        return cls([*SPECIALS, *kept])

    @classmethod
    def build(cls, paths: Iterable[PathLike], min_count: int = 3) -> LMVocabulary:
        counts: Counter = Counter()
        for path in paths:
            for sentence in iter_sentences(path):
                counts.update(sentence)
        if not counts:
            raise ContextualError("no tokens in the training files; expected one tokenised sentence per line")
        return cls.from_counts(counts, min_count)

    def save(self, path: PathLike) -> None:
        """Written whole or not at all (a full disk or a kill never leaves a shorter vocabulary to resume with)."""
        with atomic_file(path) as tmp:
            tmp.write_text("\n".join(self.words) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: PathLike) -> LMVocabulary:
        return cls(Path(path).read_text(encoding="utf-8").rstrip("\n").split("\n"))
