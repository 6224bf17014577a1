"""A frozen encoder's outputs per segment, kept across batches and epochs (``model.segment_cache_mb``).

A segment's vectors depend only on its own words (``segments.py``), so while the encoder runs without
gradients and its weights stay the same, a segment seen before (the same sentence in the next
training epoch, the dev set at every evaluation, a repeated line) is copied from here instead of
being encoded again. Entries are the exact float32 rows (n_layers, len(segment), width).

The cache holds at most ``max_mb`` MiB and keeps what it has once full: training revisits its data in
cycles, where evicting old entries (LRU) would make every lookup miss. It empties itself when the
weights signature it is given changes (in-place edits, averaged parameters swapped in, another
device), and its owner (``EncoderShim``) empties it when it loads new weights or applies an update.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

MIB = 1 << 20


class SegmentCache:
    def __init__(self, max_mb: int = 0):
        if max_mb < 0:
            raise ValueError(f"segment_cache_mb must be 0 (no cache) or a size in MiB, got {max_mb}")
        self.max_mb = max_mb
        self.nbytes = 0
        self._layers: dict[tuple[str, ...], Any] = {}
        self._signature: Hashable = None

    def __len__(self) -> int:
        return len(self._layers)

    @property
    def enabled(self) -> bool:
        return self.max_mb > 0

    def clear(self) -> None:
        self._layers.clear()
        self.nbytes = 0
        self._signature = None

    def validate(self, signature: Hashable) -> None:
        """Empty the cache if the weights changed since its entries were computed."""
        if signature != self._signature:
            self.clear()
            self._signature = signature

    def get(self, words: tuple[str, ...]) -> Any | None:
        return self._layers.get(words)

    def put(self, words: tuple[str, ...], layers: Any) -> None:
        if words in self._layers or self.nbytes + layers.nbytes > self.max_mb * MIB:
            return
        self._layers[words] = layers.copy()  # not a view that would keep the whole batch alive
        self.nbytes += layers.nbytes
