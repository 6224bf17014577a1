"""Every layer's vector of the occurrences of one corpus under one encoder, computed once and shared by
every view of that (encoder, corpus): the explorer, the probe and the comparison ask for the
(record, position) pairs they need, and only the sentences that hold a pair not seen before are embedded,
in chunks of at most ``CHUNK_SENTENCES`` sentences and, unless one sentence is longer, ``CHUNK_TOKENS``
tokens (``record_chunks``: the arrays of one chunk are held at once), with ``progress(done, total)``
called after each chunk (so a page can show a count). The store keeps one (n_layers, dim) float32 array
per pair, never whole sentences.

It also times what it embeds, so that a page can say how long an embedding will take before it starts:
``rate`` = sentences embedded / seconds spent embedding them (this encoder, this corpus, this machine);
``calibrate`` embeds the first chunk of what is missing (kept, like any other) to measure it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from ..batching import plan_batches
from .occurrence_vectors import Embed

CHUNK_SENTENCES = 64
CHUNK_TOKENS = 16_384  # ELMo-original's arrays of that many tokens: 200 MB
Progress = Callable[[int, int], None]


class OccurrenceStore:
    def __init__(self, embed: Embed, records: Sequence[dict]):
        self.embed, self.records = embed, records
        self.vectors: dict[tuple[int, int], np.ndarray] = {}
        self.lock = threading.Lock()  # Streamlit runs sessions in threads; one embedding at a time
        self.sentences_timed, self.seconds = 0, 0.0

    @property
    def rate(self) -> float | None:
        """Sentences per second measured so far; None before anything was embedded."""
        return self.sentences_timed / self.seconds if self.sentences_timed and self.seconds > 0 else None

    def calibrate(self, pairs: Sequence[tuple[int, int]]) -> float | None:
        """Embed the first chunk of the sentences ``pairs`` still need (once), for ``rate``."""
        first = set(next(iter(record_chunks(self.records, self.missing_sentences(pairs))), []))
        self.layers([(r, p) for r, p in pairs if int(r) in first])
        return self.rate

    def estimate_seconds(self, pairs: Sequence[tuple[int, int]]) -> float | None:
        """How long embedding what ``pairs`` still need takes at the measured ``rate``."""
        rate = self.rate
        return len(self.missing_sentences(pairs)) / rate if rate else None

    def missing_sentences(self, pairs: Sequence[tuple[int, int]]) -> list[int]:
        """The records that must still be embedded for ``pairs``, in corpus order."""
        return sorted({int(r) for r, p in pairs if (int(r), int(p)) not in self.vectors})

    def layers(self, pairs: Sequence[tuple[int, int]], progress: Progress | None = None) -> np.ndarray:
        """(len(pairs), n_layers, dim) float32, embedding only what is missing."""
        pairs = [(int(r), int(p)) for r, p in pairs]
        with self.lock:
            todo = self.missing_sentences(pairs)
            wanted: dict[int, list[int]] = {}
            for record, position in pairs:
                wanted.setdefault(record, []).append(position)
            done = 0
            for chunk in record_chunks(self.records, todo):
                started = time.perf_counter()
                arrays = self.embed([list(self.records[r]["tokens"]) for r in chunk])
                self.seconds += time.perf_counter() - started
                self.sentences_timed += len(chunk)
                for record, array in zip(chunk, arrays, strict=True):
                    for position in wanted[record]:
                        self.vectors[record, position] = np.asarray(array[:, position], dtype=np.float32)
                done += len(chunk)
                if progress is not None:
                    progress(done, len(todo))
            return np.stack([self.vectors[pair] for pair in pairs])


def record_chunks(records: Sequence[dict], indices: Sequence[int]) -> list[list[int]]:
    """``indices`` in order, in chunks of at most ``CHUNK_SENTENCES`` records and ``CHUNK_TOKENS`` tokens (a
    longer record is a chunk of its own)."""
    lengths = [len(records[i]["tokens"]) for i in indices]
    plan = plan_batches(lengths, CHUNK_TOKENS, CHUNK_SENTENCES, keep_order=True)
    return [[indices[i] for i in chunk] for chunk in plan]


def occurrence_pairs(occurrences) -> list[tuple[int, int]]:
    """The (record, position) pairs of an occurrence table (``occurrences.find_occurrences``)."""
    return list(zip(occurrences["record"].tolist(), occurrences["position"].tolist(), strict=True))


def occurrence_layers(embed: Embed, records: Sequence[dict], occurrences) -> np.ndarray:
    """(n_occurrences, n_layers, dim) float32 in one go, each sentence that holds an occurrence embedded once."""
    return OccurrenceStore(embed, records).layers(occurrence_pairs(occurrences))
