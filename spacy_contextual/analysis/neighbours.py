"""The k nearest occurrences of one occurrence in the original vector space, by cosine distance
(1 - cosine similarity) or euclidean distance as the Embedding Projector offers, as keyword-in-context
(KWIC) lines: the word in the middle, at most ``KWIC_WIDTH`` characters of context
on either side, cut between words, so that the hits line up and the table fits a half-width column
(its cells never wrap; what does not fit is cut with "…" at a word boundary). With gold senses,
precision@k is the share of the k neighbours that have the query's sense, shown beside what k random
other occurrences would score: (n_s - 1) / (n - 1), n_s occurrences of the query's sense among n, the
query itself left out on both sides. Ties are reported as ties: when the k-th distance equals the
distance of an occurrence left out of the k (a type-level layer gives every occurrence of a form the same
vector), which k are "nearest" is an arbitrary tie-break, so precision@k is not defined. Each line
carries its occurrence (``data-occurrence``), so that a page can link a line to its point."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from .projection import normalize_rows

KWIC_WIDTH = 80  # characters of context either side at most: the column shows as many words as fit
SENSE_WIDTH = 14  # characters of a sense label
TIE_TOLERANCE = 1e-6  # distances closer than this (relative to the largest) are equal (float32 rounding)
METRICS = ("cosine", "euclidean")


def distances(vectors: np.ndarray, index: int, metric: str = "cosine") -> np.ndarray:
    """(n,) float64: every occurrence's distance to occurrence ``index``: 1 - cosine similarity, or euclidean."""
    if metric not in METRICS:
        raise ValueError(f"unknown distance '{metric}': choose one of {', '.join(METRICS)}")
    vectors = np.asarray(vectors, dtype=np.float32)
    if metric == "cosine":
        unit = normalize_rows(vectors)
        return 1.0 - (unit @ unit[index]).astype(np.float64)
    return np.sqrt(((vectors - vectors[index]).astype(np.float64) ** 2).sum(axis=1))


def nearest_neighbours(vectors: np.ndarray, index: int, k: int = 10, metric: str = "cosine") -> pd.DataFrame:
    """The ``k`` occurrences nearest to occurrence ``index`` by ``metric`` (itself excluded): columns
    ``occurrence``, ``distance`` (nearest first), ``similarity`` (cosine) and ``tied`` (its distance equals
    that of an occurrence outside the k); ``attrs``: ``tied_outside`` (how many occurrences outside tie with
    the k-th), ``farthest`` (the distance of the farthest occurrence: the scale of the bars) and ``metric``."""
    if not 0 <= index < len(vectors):
        raise IndexError(f"occurrence {index} does not exist: there are {len(vectors)}")
    distance = distances(vectors, index, metric)
    farthest = float(np.delete(distance, index).max()) if len(vectors) > 1 else 0.0
    tolerance = TIE_TOLERANCE * max(1.0, farthest)
    distance[index] = np.inf
    order = np.argsort(distance, kind="stable")[: len(vectors) - 1]  # the query (inf) left out
    nearest, outside = order[:k], order[k:]
    tied = np.zeros(len(nearest), dtype=bool)
    tied_outside = 0
    if len(outside):
        tied = distance[outside[0]] - distance[nearest] <= tolerance
        tied_outside = int((distance[outside] - distance[nearest[-1]] <= tolerance).sum()) if tied.any() else 0
    unit = normalize_rows(np.asarray(vectors, dtype=np.float32))
    table = pd.DataFrame({
        "occurrence": nearest, "distance": distance[nearest], "similarity": (unit[nearest] @ unit[index]).astype(float),
        "tied": tied,
    })  # fmt: skip
    table.attrs.update(tied_outside=tied_outside, farthest=farthest, metric=metric)
    return table


def fit_words(words: list[str], width: int) -> str:
    """As many whole ``words`` as fit in ``width`` characters (with "…" when some are left out)."""
    text = ""
    for word in words:
        longer = f"{text} {word}" if text else word
        if len(longer) > width - 1:
            return text + " …" if text else "…"
        text = longer
    return text


def kwic(tokens: list[str], position: int, width: int = KWIC_WIDTH) -> tuple[str, str, str]:
    """(left, word, right): at most ``width`` characters either side, cut between words with "…"."""
    left = fit_words(tokens[:position][::-1], width)
    left = " ".join(reversed(left.split(" "))) if left else ""
    return left, tokens[position], fit_words(tokens[position + 1 :], width)


def neighbour_table(
    records: list[dict],
    occurrences: pd.DataFrame,
    vectors: np.ndarray,
    index: int,
    k: int = 10,
    metric: str = "cosine",
) -> pd.DataFrame:
    """``nearest_neighbours`` with each neighbour's KWIC line, sense and whether it is the query's sense."""
    table = nearest_neighbours(vectors, index, k, metric)
    rows = occurrences.iloc[table["occurrence"]]
    senses = rows["sense"].to_numpy()
    table["sense"] = senses
    query_sense = occurrences["sense"].iloc[index]
    table["same_sense"] = np.array([s is not None and not pd.isna(s) and s == query_sense for s in senses], dtype=bool)
    lines = [kwic(records[r]["tokens"], p) for r, p in zip(rows["record"], rows["position"], strict=True)]
    table["left"], table["word"], table["right"] = zip(*lines, strict=True) if lines else ((), (), ())
    return table


def chance_precision(occurrences: pd.DataFrame, index: int) -> float | None:
    """What precision@k of k random other occurrences is on average: (n_s - 1) / (n - 1) for the query
    ``index`` of sense s (itself left out); None without a gold sense or another occurrence."""
    sense = occurrences["sense"].iloc[index]
    if sense is None or pd.isna(sense) or len(occurrences) < 2:
        return None
    return float(((occurrences["sense"] == sense).sum() - 1) / (len(occurrences) - 1))


def precision_at_k(table: pd.DataFrame, query_sense) -> float | None:
    """Share of the neighbours with the query's gold sense; None without a gold sense, or when the k
    nearest are not defined (``tie_note``)."""
    if query_sense is None or pd.isna(query_sense) or table.empty or table["tied"].any():
        return None
    return float(table["same_sense"].mean())


def tie_note(table: pd.DataFrame) -> str | None:
    """ "7 of the 10 nearest tie (cosine distance 0.000) with 12 occurrences left out: ...", or None."""
    if table.empty or not table["tied"].any():
        return None
    tied = int(table["tied"].sum())
    return (
        f"{tied} of the {len(table)} nearest tie ({DISTANCE_NAMES[table.attrs.get('metric', 'cosine')]} "
        f"{table['distance'].iloc[-1]:.3f}) with "
        f"{table.attrs.get('tied_outside', 0):,} occurrences left out: which of them count as nearest is an "
        f"arbitrary tie-break, so precision@{len(table)} is not defined here."
    )


def _words(text: str, nearest_first: bool = False) -> str:
    """The context as one span per word (the left context nearest word first), so that the browser can
    drop whole words that do not fit the column."""
    words = text.split()
    return "".join(f"<span>{html.escape(w)}</span>" for w in (words[::-1] if nearest_first else words))


DISTANCE_NAMES = {"cosine": "cosine distance", "euclidean": "euclidean distance"}


def kwic_html(table: pd.DataFrame, query_sense=None) -> str:
    """The hits as one aligned monospace line each: rank ("=" for a tie with occurrences left out), the
    distance with a bar (its share of ``attrs["farthest"]``, the farthest occurrence), the sense (✓ when it
    is the query's), the left context right-aligned, the word in bold, the right context. The table takes
    the width of its column; each context is a one-line flex box of word spans that wraps onto a hidden
    second line, so a narrow column drops whole words far from the keyword and never cuts one. A row
    with an ``occurrence`` carries it as ``data-occurrence``. Every text is escaped."""
    has_sense = "sense" in table and table["sense"].notna().any()
    scale = float(table.attrs.get("farthest") or table["distance"].max() or 1.0) if len(table) else 1.0
    rows = []
    for rank, hit in enumerate(table.itertuples(index=False), start=1):
        sense = ""
        if has_sense:
            mark = "✓ " if getattr(hit, "same_sense", False) else ("✗ " if query_sense else "")
            label = str(hit.sense or "")
            label = label if len(label) <= SENSE_WIDTH else label[: SENSE_WIDTH - 1] + "…"
            sense = f"<td class='sense' title='{html.escape(str(hit.sense or ''))}'>{mark}{html.escape(label)}</td>"
        occurrence = getattr(hit, "occurrence", None)
        attribute = f" data-occurrence='{int(occurrence)}'" if occurrence is not None else ""
        share = min(max(float(hit.distance) / scale, 0.0), 1.0) if scale > 0 else 0.0
        rows.append(
            f"<tr{attribute}><td class='rank'>{'=' if getattr(hit, 'tied', False) else rank}</td>"
            f"<td class='dist'><span class='bar' style='width:{100 * share:.1f}%'></span>"
            f"<span class='value'>{hit.distance:.3f}</span></td>{sense}"
            f"<td><div class='left'>{_words(hit.left, nearest_first=True)}</div></td>"
            f"<td class='word'>{html.escape(hit.word)}</td><td><div class='right'>{_words(hit.right)}</div></td></tr>"
        )
    word = max([len(str(w)) for w in table["word"]] + [4]) + 1
    sense_column = "<col style='width:17ch'>" if has_sense else ""
    columns = f"<col style='width:3ch'><col style='width:7.5ch'>{sense_column}<col><col style='width:{word}ch'><col>"
    return KWIC_STYLE + f"<table class='kwic'><colgroup>{columns}</colgroup>" + "".join(rows) + "</table>"


KWIC_STYLE = (
    "<style>.kwic{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;border-collapse:collapse;"
    "line-height:1.45;width:100%;table-layout:fixed}.kwic td{padding:1px 3px;white-space:nowrap;overflow:hidden}"
    ".kwic .left,.kwic .right{display:flex;flex-wrap:wrap;height:1.45em;overflow:hidden;column-gap:1ch}"
    ".kwic .left{flex-direction:row-reverse}.kwic .left span,.kwic .right span{white-space:nowrap}"
    ".kwic .word{font-weight:700;text-align:center;background:#fff3c4}"
    ".kwic .rank,.kwic .dist{color:#555;text-align:right}.kwic .sense{color:#333;text-overflow:ellipsis}"
    ".kwic .dist{position:relative}.kwic .dist .bar{position:absolute;left:0;top:2px;bottom:2px;background:#cfe3f3}"
    ".kwic .dist .value{position:relative}.kwic tr[data-occurrence]{cursor:pointer}"
    ".kwic tr[data-occurrence]:hover td{background:#eef4fb}"
    ".kwic tr[data-occurrence]:hover .word{background:#ffe58a}</style>"
)
