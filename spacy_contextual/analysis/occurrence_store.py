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

Before a large embedding a page says how long it will take (``estimate_seconds`` = tokens missing x
seconds a token), from a cost measured on this machine, this encoder and this corpus by ``calibrate``: the
first chunks of the missing sentences, drawn across the file, embedded (and kept); the first warms the
encoder up and sets the chunk size, the next two, of the size the embedding's chunks will have (a batch of
40 sentences runs at half the rate per token of one of 600), are timed, and the faster counts (on a machine
others share, a burst of their work slows one of them). (It errs on the slow side for an
encoder whose char-CNN cache makes later sentences cheaper: several times for a very small model, whose
char-CNN is most of its work; little for the published ones, whose LSTMs are.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from .occurrence_vectors import Embed
from .sampling import spread_order

CHUNK_SECONDS = 2.0  # a chunk of about this much work between two progress calls (larger batches run faster)
FIRST_CHUNK_TOKENS = 512  # the first chunk, before a rate is measured
MIN_CHUNK_TOKENS = 256  # smaller batches waste more than they save
CALIBRATION_CHUNKS = 2  # timed chunks of the embedding's size, the faster counts
MAX_CHUNK_TOKENS = 8192  # every layer of every token of a chunk is in memory at once (100 MB at 3 x 1024 wide)
RECENT_CHUNKS = 3  # the rate is that of the last few chunks (it grows as a char-CNN cache fills)
Progress = Callable[[int, int], None]


@dataclass
class Timing:
    """Tokens embedded and the seconds they took, chunk by chunk, on ``clock`` (wall time by default; a test
    on a machine that others share may time the process's CPU instead)."""

    chunks: list[tuple[int, float]] = field(default_factory=list)  # (tokens, seconds) of each chunk
    clock: Callable[[], float] = time.perf_counter

    def add(self, tokens: int, seconds: float) -> None:
        self.chunks.append((tokens, seconds))

    @property
    def rate(self) -> float | None:
        """Tokens per second over the last ``RECENT_CHUNKS`` chunks; None before anything was embedded."""
        recent = self.chunks[-RECENT_CHUNKS:]
        tokens, seconds = sum(t for t, _ in recent), sum(s for _, s in recent)
        return tokens / seconds if tokens and seconds > 0 else None

    def steady_tokens(self) -> int:
        """About ``CHUNK_SECONDS`` of work at the measured rate, within ``MIN_CHUNK_TOKENS`` and
        ``MAX_CHUNK_TOKENS``: the size chunks grow to."""
        rate = self.rate
        wanted = FIRST_CHUNK_TOKENS if rate is None else int(rate * CHUNK_SECONDS)
        return min(max(MIN_CHUNK_TOKENS, wanted), MAX_CHUNK_TOKENS)

    def chunk_tokens(self) -> int:
        """The token budget of the next chunk: ``steady_tokens``, at most twice the last chunk (a rate
        measured on a small chunk can be far from a large one's); ``FIRST_CHUNK_TOKENS`` at first."""
        if not self.chunks:
            return FIRST_CHUNK_TOKENS
        return min(self.steady_tokens(), 2 * max(self.chunks[-1][0], MIN_CHUNK_TOKENS))


def embed_in_chunks(
    embed: Embed,
    sentences: Sequence[Sequence[str]],
    timing: Timing,
    progress: Progress | None = None,
    chunk_tokens: int | None = None,
) -> Iterator[tuple[list[int], list[np.ndarray]]]:
    """(indices into ``sentences``, their arrays) a chunk at a time (``chunk_tokens`` each, or as ``timing``
    says), timed into ``timing``, with ``progress(done_tokens, total_tokens)`` before the first chunk and after
    each."""
    lengths = [len(sentence) for sentence in sentences]
    total, done, start = sum(lengths), 0, 0
    if progress is not None:
        progress(0, total)
    while start < len(sentences):
        budget, end = chunk_tokens or timing.chunk_tokens(), start + 1
        tokens = lengths[start]
        while end < len(sentences) and tokens + lengths[end] <= budget:
            tokens += lengths[end]
            end += 1
        chunk = list(range(start, end))
        started = timing.clock()
        arrays = embed([list(sentences[i]) for i in chunk])
        timing.add(tokens, timing.clock() - started)
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
        self.cost: float | None = None  # seconds a token, measured by ``calibrate``

    @property
    def rate(self) -> float | None:
        """Tokens per second lately; None before anything was embedded."""
        return self.timing.rate

    def calibrate(self, pairs: Sequence[tuple[int, int]], seed: int = 0) -> float | None:
        """Measure ``cost`` (seconds a token, see the module docstring) on the sentences ``pairs`` still need,
        drawn across the file: a first chunk (which warms the encoder up and sets the chunk size), then two
        chunks of the size the embedding will use, timed: the faster of the two counts (a burst of other work
        on the machine slows one). None when nothing is missing."""
        missing = self.missing_sentences(pairs)
        order = [missing[i] for i in spread_order([None] * len(missing), seed)]
        first = self._take(order, FIRST_CHUNK_TOKENS)
        self.layers([(r, p) for r, p in pairs if int(r) in first])
        order, costs = order[len(first) :], []
        for _ in range(CALIBRATION_CHUNKS):
            chunk = self._take(order, self.timing.steady_tokens())
            if not chunk:
                break
            order = order[len(chunk) :]
            tokens = sum(len(self.records[r]["tokens"]) for r in chunk)
            started = self.timing.clock()
            self.layers([(r, p) for r, p in pairs if int(r) in chunk], chunk_tokens=tokens)
            costs.append((self.timing.clock() - started) / tokens)
        self.cost = min(costs) if costs else self.cost
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
        return None if self.cost is None else self.cost * self.missing_tokens(pairs)

    def missing_sentences(self, pairs: Sequence[tuple[int, int]]) -> list[int]:
        """The records that must still be embedded for ``pairs``, in corpus order."""
        return sorted({int(r) for r, p in pairs if (int(r), int(p)) not in self.vectors})

    def missing_tokens(self, pairs: Sequence[tuple[int, int]]) -> int:
        return sum(len(self.records[r]["tokens"]) for r in self.missing_sentences(pairs))

    def layers(
        self, pairs: Sequence[tuple[int, int]], progress: Progress | None = None, chunk_tokens: int | None = None
    ) -> np.ndarray:
        """(len(pairs), n_layers, dim) float32, embedding only what is missing (``progress`` as the module says;
        ``chunk_tokens``: one budget for every chunk instead of the measured one)."""
        pairs = [(int(r), int(p)) for r, p in pairs]
        with self.lock:
            todo = self.missing_sentences(pairs)
            wanted: dict[int, list[int]] = {}
            for record, position in pairs:
                wanted.setdefault(record, []).append(position)
            sentences = [self.records[r]["tokens"] for r in todo]
            chunks = embed_in_chunks(self.embed, sentences, self.timing, progress if todo else None, chunk_tokens)
            for chunk, arrays in chunks:
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
