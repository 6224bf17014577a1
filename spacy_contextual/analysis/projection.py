"""2-D projections of occurrence vectors: PCA or UMAP (cosine), on L2-normalised vectors so that the
picture agrees with the cosine nearest neighbours. UMAP first reduces wide vectors to their top 50
principal components (the usual preprocessing), gets the exact cosine k-nearest-neighbour graph
computed here in blocks (instead of UMAP's NN-descent, whose numba compilation alone takes most of a
minute on a small CPU), and runs 200 epochs."""

from __future__ import annotations

import warnings

import numpy as np

METHODS = ("pca", "umap")
UMAP_PCA_DIMS = 50
UMAP_EPOCHS = 200


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def project(vectors: np.ndarray, method: str = "pca", n_neighbors: int = 15, seed: int = 0) -> np.ndarray:
    """(n, 2) coordinates."""
    if method not in METHODS:
        raise ValueError(f"unknown projection '{method}': choose one of {', '.join(METHODS)}")
    if len(vectors) < 3:
        raise ValueError(f"a projection needs at least 3 points, got {len(vectors)}")
    unit = normalize_rows(np.asarray(vectors, dtype=np.float32))
    if method == "pca":
        from sklearn.decomposition import PCA

        centered = unit - unit.mean(axis=0)
        if np.abs(centered).max() < 1e-6:  # every vector equal (a static layer, one word form): one point
            return np.zeros((len(unit), 2), dtype=np.float32)
        coords = PCA(n_components=2, svd_solver="covariance_eigh", random_state=seed).fit_transform(centered)
        if coords.shape[1] < 2:
            coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
        return coords.astype(np.float32)
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
        return reducer.fit_transform(unit).astype(np.float32)


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
