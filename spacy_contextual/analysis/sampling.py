"""Samples drawn across a whole file, never its first n, and stratified by sense where labels exist, with
a line that says how they were drawn ("2,000 of 4,333, stratified by sense").

``spread_order(labels, seed)`` is a permutation of the rows in which every prefix is stratified: row j
(0-based, in a seeded random order within its label's c rows) gets the key (j + 0.5) / c, and the rows
are sorted by key, so that the first m rows hold each label about m·c/n times (within one or two). A
sample of m is that prefix in corpus order; the whole-corpus token index takes the prefix that fits its
token budget. Without labels (or with one) the order is a seeded random permutation: drawn at random
across the file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STRATIFIED, RANDOM, ALL = "stratified by sense", "drawn at random across the file", "all"
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Sample:
    indices: np.ndarray  # the chosen rows, ascending (corpus order)
    total: int  # rows there were to choose from
    how: str  # STRATIFIED, RANDOM or ALL

    def describe(self, unit: str = "") -> str:
        """ "2,000 of 4,333 occurrences, stratified by sense", or "all 4,333 occurrences"."""
        unit = f" {unit}" if unit else ""
        if len(self.indices) == self.total:
            return f"all {self.total:,}{unit}"
        return f"{len(self.indices):,} of {self.total:,}{unit}, {self.how}"


def has_labels(labels: Sequence) -> bool:
    """More than one distinct label (None counts as one: "no label")."""
    return len({label for label in labels}) > 1 and any(label is not None for label in labels)


def spread_order(labels: Sequence, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Every row once, in an order whose every prefix is stratified by ``labels`` (None: unlabelled,
    a group of its own), or random when there is nothing to stratify by."""
    rng = np.random.default_rng(seed)
    n = len(labels)
    if not has_labels(labels):
        return rng.permutation(n)
    names = np.array(["" if label is None else f"={label}" for label in labels], dtype=object)
    keys = np.empty(n, dtype=np.float64)
    for name in sorted(set(names.tolist())):
        members = np.flatnonzero(names == name)
        rng.shuffle(members)
        keys[members] = (np.arange(len(members)) + 0.5) / len(members)
    return np.argsort(keys, kind="stable")


def draw(labels: Sequence, size: int | None, seed: int = DEFAULT_SEED) -> Sample:
    """At most ``size`` rows of ``len(labels)``: all of them, or a prefix of ``spread_order`` in corpus order."""
    total = len(labels)
    if size is None or size >= total:
        return Sample(np.arange(total), total, ALL)
    chosen = np.sort(spread_order(labels, seed)[:size])
    return Sample(chosen, total, STRATIFIED if has_labels(labels) else RANDOM)
