"""2-D projections of occurrence vectors: PCA or UMAP (cosine), on L2-normalised vectors so that the
picture agrees with the cosine nearest neighbours. PCA reports the share of variance each axis
explains. UMAP first reduces wide vectors to their top 50 principal components (the usual
preprocessing), gets the exact cosine k-nearest-neighbour graph computed here in blocks (instead of
UMAP's NN-descent, whose numba compilation alone takes most of a minute on a small CPU), and runs 200
epochs. ``align`` rotates one projection onto another (orthogonal Procrustes with scale), so that two
models' pictures of the same occurrences can be compared point by point."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

METHODS = ("pca", "umap")
UMAP_PCA_DIMS = 50
UMAP_EPOCHS = 200


@dataclass
class Projection:
    coords: np.ndarray  # (n, 2) float32
    axis_titles: tuple[str, str]


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def project(vectors: np.ndarray, method: str = "pca", n_neighbors: int = 15, seed: int = 0) -> Projection:
    if method not in METHODS:
        raise ValueError(f"unknown projection '{method}': choose one of {', '.join(METHODS)}")
    if len(vectors) < 3:
        raise ValueError(f"a projection needs at least 3 points, got {len(vectors)}")
    unit = normalize_rows(np.asarray(vectors, dtype=np.float32))
    if method == "pca":
        return pca(unit, seed)
    import umap

    if unit.shape[1] > UMAP_PCA_DIMS and len(unit) > UMAP_PCA_DIMS:
        from sklearn.decomposition import PCA

        unit = PCA(n_components=UMAP_PCA_DIMS, svd_solver="covariance_eigh", random_state=seed).fit_transform(unit)
    k = max(2, min(n_neighbors, len(unit) - 1))
    reducer = umap.UMAP(
        n_components=2,
        n_neighbors=k,
        metric="cosine",
        precomputed_knn=(*cosine_knn(unit, k), None),
        random_state=seed,
        init="spectral" if len(unit) > 10 else "random",
        n_epochs=UMAP_EPOCHS,
        n_jobs=1,
    )
    with warnings.catch_warnings():  # "no search index, transform() unavailable": we never transform
        warnings.simplefilter("ignore", UserWarning)
        coords = reducer.fit_transform(unit).astype(np.float32)
    return Projection(coords, ("UMAP 1 (cosine)", "UMAP 2 (cosine)"))


def pca(unit: np.ndarray, seed: int = 0) -> Projection:
    """The top two principal components of the (already normalised) rows, titled with their share of variance."""
    from sklearn.decomposition import PCA

    centered = unit - unit.mean(axis=0)
    if np.abs(centered).max() < 1e-6:  # every vector equal (a static layer, one word form): one point
        return Projection(np.zeros((len(unit), 2), dtype=np.float32), ("PC1 (all vectors equal)", "PC2"))
    fit = PCA(n_components=min(2, *centered.shape), svd_solver="covariance_eigh", random_state=seed)
    coords = fit.fit_transform(centered)
    explained = list(fit.explained_variance_ratio_) + [0.0] * (2 - coords.shape[1])
    coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
    titles = tuple(f"PC{i + 1} ({100 * share:.1f} % of variance)" for i, share in enumerate(explained[:2]))
    return Projection(coords.astype(np.float32), titles)


def align(coords: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``coords`` rotated (or reflected), scaled and shifted to lie as close as possible to ``reference``
    (least squares over the rows, which must be the same points in the same order)."""
    source, target = coords - coords.mean(0), reference - reference.mean(0)
    u, singular, vt = np.linalg.svd(source.T @ target)
    rotation = u @ vt
    norm = (source**2).sum()
    scale = singular.sum() / norm if norm > 0 else 1.0
    return (scale * source @ rotation + reference.mean(0)).astype(np.float32)


def cosine_knn(vectors: np.ndarray, k: int, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest neighbours by cosine distance, each point first with distance 0 (as UMAP expects):
    (indices (n, k), distances (n, k)), nearest first."""
    unit = normalize_rows(np.asarray(vectors, dtype=np.float32))
    indices = np.empty((len(unit), k), dtype=np.int64)
    distances = np.empty((len(unit), k), dtype=np.float32)
    for start in range(0, len(unit), block):
        rows = np.arange(start, min(start + block, len(unit)))
        distance = np.clip(1.0 - unit[rows] @ unit.T, 0.0, 2.0)
        distance[np.arange(len(rows)), rows] = -1.0  # itself first, even among exact duplicates
        nearest = np.argpartition(distance, k - 1, axis=1)[:, :k]
        order = np.argsort(np.take_along_axis(distance, nearest, 1), axis=1, kind="stable")
        indices[rows] = np.take_along_axis(nearest, order, 1)
        distances[rows] = np.maximum(np.take_along_axis(distance, indices[rows], 1), 0.0)
    return indices, distances
