"""The k nearest occurrences of one occurrence in the original vector space (cosine similarity),
shown as their sentences with the word highlighted."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .projection import normalize_rows

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")


def nearest_neighbours(vectors: np.ndarray, index: int, k: int = 10) -> pd.DataFrame:
    """The ``k`` occurrences most cosine-similar to occurrence ``index`` (itself excluded):
    columns ``occurrence`` and ``similarity``, most similar first."""
    if not 0 <= index < len(vectors):
        raise IndexError(f"occurrence {index} does not exist: there are {len(vectors)}")
    unit = normalize_rows(np.asarray(vectors, dtype=np.float32))
    similarity = unit @ unit[index]
    similarity[index] = -np.inf
    nearest = np.argsort(-similarity, kind="stable")[: min(k, len(vectors) - 1)]
    return pd.DataFrame({"occurrence": nearest, "similarity": similarity[nearest].astype(float)})


def highlight(tokens: list[str], position: int, marker: str = "**") -> str:
    """The sentence as Markdown, special characters escaped, the word at ``position`` in bold."""
    escaped = [_MARKDOWN_SPECIAL.sub(r"\\\1", token) for token in tokens]
    escaped[position] = f"{marker}{escaped[position]}{marker}"
    return " ".join(escaped)


def neighbour_table(
    records: list[dict], occurrences: pd.DataFrame, vectors: np.ndarray, index: int, k: int = 10
) -> pd.DataFrame:
    """``nearest_neighbours`` with each neighbour's sense and highlighted sentence."""
    table = nearest_neighbours(vectors, index, k)
    rows = occurrences.iloc[table["occurrence"]]
    table["sense"] = rows["sense"].to_numpy()
    table["sentence"] = [
        highlight(records[r]["tokens"], p) for r, p in zip(rows["record"], rows["position"], strict=True)
    ]
    return table
