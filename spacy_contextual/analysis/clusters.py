"""Clusters of occurrences: KMeans (k-means++ seeding, one run) or agglomerative (Ward; the tree is
built once and cut at every k), on L2-normalised vectors, with k given or chosen by the best
silhouette over a range (computed on a fixed sample of at most 2,000 points, so choosing k stays
fast at 5,000 occurrences)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .projection import normalize_rows

METHODS = ("kmeans", "agglomerative")
SILHOUETTE_SAMPLE = 2000


@dataclass
class Clustering:
    labels: np.ndarray
    k: int
    silhouettes: dict[int, float] = field(default_factory=dict)  # k -> score, when k was chosen


def cluster(
    vectors: np.ndarray,
    method: str = "kmeans",
    k: int | None = None,
    k_range: tuple[int, int] = (2, 8),
    seed: int = 0,
) -> Clustering:
    """``k=None``: the k in ``k_range`` (inclusive) with the best silhouette."""
    if method not in METHODS:
        raise ValueError(f"unknown clustering '{method}': choose one of {', '.join(METHODS)}")
    unit = normalize_rows(np.asarray(vectors, dtype=np.float64))
    distinct = len(np.unique(unit.round(6), axis=0))
    if distinct < 2:  # all occurrences have the same vector (a static layer): one cluster
        return Clustering(np.zeros(len(unit), dtype=int), 1)
    fit = _kmeans(unit, seed) if method == "kmeans" else _agglomerative(unit)
    if k is not None:
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        return Clustering(fit(min(k, distinct)), min(k, distinct))
    from sklearn.metrics import silhouette_score

    low, high = k_range[0], min(k_range[1], distinct - 1 if distinct > 2 else 2, len(unit) - 1)
    silhouettes, fits = {}, {}
    for candidate in range(low, max(low, high) + 1):
        labels = fit(candidate)
        if len(np.unique(labels)) < 2:
            continue
        fits[candidate] = labels
        sample = min(SILHOUETTE_SAMPLE, len(unit))
        silhouettes[candidate] = float(silhouette_score(unit, labels, sample_size=sample, random_state=seed))
    if not silhouettes:
        return Clustering(np.zeros(len(unit), dtype=int), 1)
    best = max(silhouettes, key=silhouettes.get)
    return Clustering(fits[best], best, silhouettes)


def _kmeans(unit: np.ndarray, seed: int):
    from sklearn.cluster import KMeans

    return lambda k: KMeans(n_clusters=k, n_init=1, random_state=seed).fit_predict(unit)


def _agglomerative(unit: np.ndarray):
    from scipy.cluster.hierarchy import fcluster, linkage

    tree = linkage(unit, method="ward")  # built once, cut at every k
    return lambda k: fcluster(tree, t=k, criterion="maxclust") - 1
