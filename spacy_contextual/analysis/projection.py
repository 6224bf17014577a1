"""2-D projections of occurrence vectors: PCA or UMAP (cosine), on L2-normalised vectors so that the
picture agrees with the cosine nearest neighbours. UMAP first reduces wide vectors to their top 50
principal components (the usual preprocessing; it keeps the neighbourhoods and makes UMAP's
neighbour search several times faster) and runs 200 epochs."""

from __future__ import annotations

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
    reducer = umap.UMAP(
        n_components=2,
        n_neighbors=max(2, min(n_neighbors, len(unit) - 1)),
        metric="cosine",
        random_state=seed,
        init="spectral" if len(unit) > 10 else "random",
        n_epochs=UMAP_EPOCHS,
        n_jobs=1,
    )
    return reducer.fit_transform(unit).astype(np.float32)
