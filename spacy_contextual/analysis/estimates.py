"""How long a computation will take, from timed runs on this machine: ``LinearCost`` = a fixed part plus a
part per item, fitted to runs at two (or more) sizes, because UMAP's time is not proportional to the
number of points: about 2 s of fixed work (graph set-up, spectral start, 200 epochs of bookkeeping) under
a part that grows with n. Extrapolating one run at one size (what a rate does) misses one part or the
other by several times; two sizes pin both.

``umap_cost(vectors)`` times UMAP (``projection.project``) on two samples of the vectors it will be
asked to project, drawn across them, and fits the cost; ``CALIBRATION_SIZES`` are small enough to take a
few seconds."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .projection import project
from .sampling import spread_order

CALIBRATION_SIZES = (250, 1000)


@dataclass(frozen=True)
class LinearCost:
    fixed: float  # seconds
    per_item: float  # seconds per item

    @classmethod
    def fit(cls, sizes: Sequence[int], seconds: Sequence[float]) -> LinearCost:
        """Least squares through (size, seconds), both parts kept at 0 or above."""
        sizes, seconds = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
        if len(set(sizes.tolist())) < 2:
            raise ValueError("a linear cost needs runs at two different sizes")
        slope, intercept = np.polyfit(sizes, seconds, 1)
        if slope < 0:  # noise larger than the growth: all of it is fixed
            return cls(float(seconds.mean()), 0.0)
        if intercept < 0:  # none of it is fixed: proportional through the origin
            return cls(0.0, float((sizes @ seconds) / (sizes @ sizes)))
        return cls(float(intercept), float(slope))

    def seconds(self, items: int) -> float:
        return self.fixed + self.per_item * items


def timed_cost(run: Callable[[int], object], sizes: Sequence[int] = CALIBRATION_SIZES) -> LinearCost:
    """``LinearCost`` of ``run(size)`` timed once at each size."""
    seconds = []
    for size in sizes:
        started = time.perf_counter()
        run(size)
        seconds.append(time.perf_counter() - started)
    return LinearCost.fit(sizes, seconds)


def umap_cost(vectors: np.ndarray, sizes: Sequence[int] = CALIBRATION_SIZES, seed: int = 0) -> LinearCost:
    """UMAP's cost on these vectors, timed on samples of ``sizes`` of them (sizes above n are cut to n;
    below two distinct sizes, the sizes are n/4 and n)."""
    n = len(vectors)
    sizes = sorted({min(size, n) for size in sizes})
    if len(sizes) < 2:
        sizes = [max(3, n // 4), n]
    order = spread_order([None] * n, seed)
    return timed_cost(lambda size: project(vectors[np.sort(order[:size])], "umap"), sizes)
