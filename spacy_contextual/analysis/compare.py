"""Two encoders on the same occurrences: how much each occurrence's neighbourhood changes.

For occurrence i, N_A(i) and N_B(i) are its k nearest other occurrences (cosine) under encoder A and
B; overlap(i) = |N_A(i) ∩ N_B(i)| / k (1: the same neighbours, 0: none in common). The occurrences
with the smallest overlap are where the two models disagree most about the word's context. The two
2-D pictures are PCA of each model's vectors, B rotated onto A (``projection.align``) so that a
point sits in about the same place in both when the models agree.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from .neighbours import kwic
from .projection import Projection, align, cosine_knn, project


def neighbour_sets(vectors: np.ndarray, k: int) -> np.ndarray:
    """(n, k) indices of every occurrence's k nearest other occurrences, nearest first."""
    k = min(k, len(vectors) - 1)
    indices, _ = cosine_knn(vectors, k + 1)
    out = np.empty((len(vectors), k), dtype=np.int64)
    for row, hits in enumerate(indices):
        out[row] = hits[hits != row][:k]
    return out


def neighbour_change(
    records: list[dict], occurrences: pd.DataFrame, vectors_a: np.ndarray, vectors_b: np.ndarray, k: int = 10
) -> pd.DataFrame:
    """One row per occurrence, most changed first: overlap, the KWIC line, its sense, and the nearest
    neighbour under each model (as KWIC text)."""
    if len(vectors_a) != len(vectors_b):
        raise ValueError(f"{len(vectors_a)} vectors from model A but {len(vectors_b)} from model B")
    a, b = neighbour_sets(vectors_a, k), neighbour_sets(vectors_b, k)
    overlap = np.array([len(set(x) & set(y)) for x, y in zip(a, b, strict=True)]) / a.shape[1]

    def line(index: int) -> str:
        record, position = occurrences["record"].iloc[index], occurrences["position"].iloc[index]
        left, word, right = kwic(records[record]["tokens"], position, 30)
        return f"{left} [{word}] {right}"

    frame = pd.DataFrame(
        {
            "occurrence": np.arange(len(occurrences)),
            "overlap": overlap,
            "sense": occurrences["sense"].to_numpy(),
            "context": [line(i) for i in range(len(occurrences))],
            "nearest in A": [line(int(x[0])) for x in a],
            "nearest in B": [line(int(y[0])) for y in b],
        }
    )
    return frame.sort_values(["overlap", "occurrence"], ignore_index=True)


def aligned_projections(vectors_a: np.ndarray, vectors_b: np.ndarray) -> tuple[Projection, Projection]:
    """PCA of each; B's picture rotated, scaled and shifted onto A's."""
    first, second = project(vectors_a, "pca"), project(vectors_b, "pca")
    aligned = align(second.coords, first.coords)
    return first, Projection(aligned, ("A's PC1 (B's PCA rotated onto A)", "A's PC2 (B's PCA rotated onto A)"))


def change_html(change: pd.DataFrame) -> str:
    """``neighbour_change`` rows as an HTML table whose text cells wrap between words only, so that it fits
    a narrow column without breaking a number, a sense or a word across lines (the number and sense
    columns never wrap; a word longer than its column scrolls the table sideways, inside its own box);
    every text is escaped."""
    rows = "".join(
        f"<tr><td class='num'>#{row.occurrence}</td><td class='num overlap'>{row.overlap:.2f}</td>"
        f"<td class='sense'>{html.escape(str(row.sense or ''))}</td><td>{html.escape(row.context)}</td>"
        f"<td>{html.escape(row.nearest_a)}</td><td>{html.escape(row.nearest_b)}</td></tr>"
        for row in change.rename(columns={"nearest in A": "nearest_a", "nearest in B": "nearest_b"}).itertuples()
    )
    style = (
        "<style>.change-box{overflow-x:auto}.change{border-collapse:collapse;width:100%;font-size:13px;"
        "line-height:1.35}.change th,.change td{border-bottom:1px solid #ddd;padding:3px 5px;text-align:left;"
        "vertical-align:top;overflow-wrap:normal;word-break:normal;hyphens:none}"
        ".change .num,.change .sense,.change th{white-space:nowrap}"
        ".change .num{text-align:right;font-variant-numeric:tabular-nums}</style>"
    )
    header = (
        "<tr><th>#</th><th>overlap</th><th>sense</th><th>context</th><th>nearest in A</th><th>nearest in B</th></tr>"
    )
    return f"{style}<div class='change-box'><table class='change'>{header}{rows}</table></div>"
