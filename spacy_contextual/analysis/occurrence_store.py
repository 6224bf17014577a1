"""Every layer's vector of the occurrences of one corpus under one encoder, computed once and shared by
every view of that (encoder, corpus): the explorer, the probe and the comparison ask for the
(record, position) pairs they need, and only the sentences that hold a pair not seen before are embedded.
The store keeps one (n_layers, dim) float32 array per pair, never whole sentences.

Work is cut into chunks of about ``CHUNK_SECONDS`` each (``embed_in_chunks``: consecutive sentences up to a
token budget, ``FIRST_CHUNK_TOKENS`` until a rate is known, then between ``MIN_CHUNK_TOKENS`` and
``MAX_CHUNK_TOKENS``, growing at most twofold from one chunk to the next; a longer sentence alone), and
``progress(done_tokens, total_tokens)`` is called before the first chunk and after each one: a page shows
the count from the start, and each call is where a page whose session ended stops the work (the
dashboard's progress callback is a Streamlit yield point).

Before a large embedding a page says how long it will take (``estimate_seconds``), from a cost measured
on this machine, this encoder and this corpus by ``calibrate``: the first two chunks of the missing
sentences, drawn across the file (the second as large as the embedding's chunks will be: a batch of 40
sentences runs at half the rate per token of one of 600), embedded and kept, and the second embedded twice
more. An encoder that runs its char-CNN once per word form (ELMo's cache) takes much longer over words it
has not seen: the first run of that chunk pays for its tokens and its new words, the second for its tokens
alone (``estimates.EmbeddingCost``), and the estimate counts both in what is missing (the words no sentence
of this store has had)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from .estimates import EmbeddingCost
from .sampling import spread_order
from .vectors import Embed

CHUNK_SECONDS = 2.0  # a chunk of about this much work between two progress calls (larger batches run faster)
FIRST_CHUNK_TOKENS = 512  # the first chunk, before a rate is measured
MIN_CHUNK_TOKENS = 256  # smaller batches waste more than they save
MAX_CHUNK_TOKENS = 8192  # every layer of every token of a chunk is in memory at once (100 MB at 3 x 1024 wide)
RECENT_CHUNKS = 3  # the rate is that of the last few chunks (it grows as a char-CNN cache fills)
Progress = Callable[[int, int], None]


@dataclass
class Timing:
    """Tokens embedded and the seconds they took, chunk by chunk."""

    chunks: list[tuple[int, float]] = field(default_factory=list)  # (tokens, seconds) of each chunk

    def add(self, tokens: int, seconds: float) -> None:
        self.chunks.append((tokens, seconds))

    @property
    def rate(self) -> float | None:
        """Tokens per second over the last ``RECENT_CHUNKS`` chunks; None before anything was embedded."""
        recent = self.chunks[-RECENT_CHUNKS:]
        tokens, seconds = sum(t for t, _ in recent), sum(s for _, s in recent)
        return tokens / seconds if tokens and seconds > 0 else None

    def chunk_tokens(self) -> int:
        """The token budget of the next chunk: about ``CHUNK_SECONDS`` of work at the measured rate, at most
        twice the last chunk (a rate measured on a small chunk can be far from a large one's) and
        ``MAX_CHUNK_TOKENS``."""
        rate = self.rate
        if rate is None:
            return FIRST_CHUNK_TOKENS
        wanted = max(MIN_CHUNK_TOKENS, int(rate * CHUNK_SECONDS))
        return min(wanted, 2 * max(self.chunks[-1][0], MIN_CHUNK_TOKENS), MAX_CHUNK_TOKENS)


def embed_in_chunks(
    embed: Embed, sentences: Sequence[Sequence[str]], timing: Timing, progress: Progress | None = None
) -> Iterator[tuple[list[int], list[np.ndarray]]]:
    """(indices into ``sentences``, their arrays) a chunk at a time, timed into ``timing``, with
    ``progress(done_tokens, total_tokens)`` before the first chunk and after each."""
    lengths = [len(sentence) for sentence in sentences]
    total, done, start = sum(lengths), 0, 0
    if progress is not None:
        progress(0, total)
    while start < len(sentences):
        budget, end = timing.chunk_tokens(), start + 1
        tokens = lengths[start]
        while end < len(sentences) and tokens + lengths[end] <= budget:
            tokens += lengths[end]
            end += 1
        chunk = list(range(start, end))
        started = time.perf_counter()
        arrays = embed([list(sentences[i]) for i in chunk])
        timing.add(tokens, time.perf_counter() - started)
        done, start = done + tokens, end
        yield chunk, arrays
        if progress is not None:
            progress(done, total)


class OccurrenceStore:
    def __init__(self, embed: Embed, records: Sequence[dict]):
        self.embed, self.records = embed, records
        self.vectors: dict[tuple[int, int], np.ndarray] = {}
        self.lock = threading.Lock()  # Streamlit runs sessions in threads; one embedding at a time
        self.timing = Timing()
        self.words: set[str] = set()  # the word forms of the sentences embedded so far
        self.cost: EmbeddingCost | None = None  # measured by ``calibrate``

    @property
    def rate(self) -> float | None:
        """Tokens per second lately; None before anything was embedded."""
        return self.timing.rate

    def calibrate(self, pairs: Sequence[tuple[int, int]], seed: int = 0) -> EmbeddingCost | None:
        """Measure ``cost`` (see the module docstring) on the sentences ``pairs`` still need, drawn across the
        file: a first chunk (which also warms the encoder up and gives a rate), then a chunk of the size the
        embedding will use, timed, and that chunk again (twice); None when nothing is missing."""
        missing = self.missing_sentences(pairs)
        order = [missing[i] for i in spread_order([None] * len(missing), seed)]
        first = self._take(order, FIRST_CHUNK_TOKENS)
        self.layers([(r, p) for r, p in pairs if int(r) in first])
        second = self._take(order[len(first) :], self.timing.chunk_tokens())
        if not second:
            return self.cost
        sentences = [list(self.records[r]["tokens"]) for r in sorted(second)]
        tokens, new_words = sum(map(len, sentences)), len({w for s in sentences for w in s} - self.words)
        started = time.perf_counter()
        self.layers([(r, p) for r, p in pairs if int(r) in second])
        once = time.perf_counter() - started
        again = []
        for _ in range(2):  # every word known to the encoder now; the faster run (a busy machine slows one)
            started = time.perf_counter()
            self.embed(sentences)
            again.append(time.perf_counter() - started)
        self.cost = EmbeddingCost.measured(tokens, new_words, once, min(again))
        return self.cost

    def _take(self, order: Sequence[int], budget: int) -> set[int]:
        """The first records of ``order`` that fit in ``budget`` tokens (at least one, if there is one)."""
        chosen, tokens = set(), 0
        for record in order:
            length = len(self.records[record]["tokens"])
            if chosen and tokens + length > budget:
                break
            chosen.add(record)
            tokens += length
        return chosen

    def estimate_seconds(self, pairs: Sequence[tuple[int, int]]) -> float | None:
        """How long embedding what ``pairs`` still need takes at the measured ``cost``."""
        if self.cost is None:
            return None
        return self.cost.seconds(self.missing_tokens(pairs), len(self.missing_words(pairs)))

    def missing_words(self, pairs: Sequence[tuple[int, int]]) -> set[str]:
        """The word forms of the sentences ``pairs`` still need that no embedded sentence had."""
        return {word for r in self.missing_sentences(pairs) for word in self.records[r]["tokens"]} - self.words

    def missing_sentences(self, pairs: Sequence[tuple[int, int]]) -> list[int]:
        """The records that must still be embedded for ``pairs``, in corpus order."""
        return sorted({int(r) for r, p in pairs if (int(r), int(p)) not in self.vectors})

    def missing_tokens(self, pairs: Sequence[tuple[int, int]]) -> int:
        return sum(len(self.records[r]["tokens"]) for r in self.missing_sentences(pairs))

    def layers(self, pairs: Sequence[tuple[int, int]], progress: Progress | None = None) -> np.ndarray:
        """(len(pairs), n_layers, dim) float32, embedding only what is missing (``progress`` as the module says)."""
        pairs = [(int(r), int(p)) for r, p in pairs]
        with self.lock:
            todo = self.missing_sentences(pairs)
            wanted: dict[int, list[int]] = {}
            for record, position in pairs:
                wanted.setdefault(record, []).append(position)
            sentences = [self.records[r]["tokens"] for r in todo]
            for chunk, arrays in embed_in_chunks(self.embed, sentences, self.timing, progress if todo else None):
                self.words.update(word for index in chunk for word in sentences[index])
                for index, array in zip(chunk, arrays, strict=True):
                    for position in wanted[todo[index]]:
                        self.vectors[todo[index], position] = np.asarray(array[:, position], dtype=np.float32)
            return np.stack([self.vectors[pair] for pair in pairs])


def occurrence_pairs(occurrences) -> list[tuple[int, int]]:
    """The (record, position) pairs of an occurrence table (``occurrences.find_occurrences``)."""
    return list(zip(occurrences["record"].tolist(), occurrences["position"].tolist(), strict=True))


def occurrence_layers(embed: Embed, records: Sequence[dict], occurrences) -> np.ndarray:
    """(n_occurrences, n_layers, dim) float32 in one go, each sentence that holds an occurrence embedded once."""
    return OccurrenceStore(embed, records).layers(occurrence_pairs(occurrences))
