"""Slices, as LIT has them: a set of occurrences the user picked (a lasso or box on the scatter, the matches
of a search), scored the way the whole set is and shown beside it: its size and share of the whole, its
majority sense and that sense's share (what always guessing it scores), and its purity.

Purity is a per-occurrence vote averaged over the slice's members, each vote computed among all the
occurrences (``occurrence_votes``): at a contextual layer whether the occurrence's ``PURITY_K`` nearest
occurrences mostly share its sense (``purity.knn_sense_votes``), at a type-level layer whether its sense is
its word form's majority sense (``purity.word_form_votes``: a k-NN vote among identical vectors would be a
tie-break). So the whole set's row is the layer's score, and a slice's row is its members' part of it."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .layer_scores import PURITY_K
from .purity import knn_sense_votes, word_form_votes

ALL_NAME = "all occurrences"
SLICE_COLUMNS = ["slice", "size", "share of all", "majority sense", "majority share"]


def score_name(type_level: bool) -> str:
    """What a layer's purity is called: "5-NN purity", or "word form alone" at a type-level layer."""
    return "word form alone" if type_level else f"{PURITY_K}-NN purity"


def gold_senses(senses: Sequence) -> bool:
    """Every occurrence has a sense, and there are at least two."""
    return all(s is not None and not pd.isna(s) for s in senses) and len(set(senses)) > 1


def occurrence_votes(
    vectors: np.ndarray, senses: Sequence, forms: Sequence[str], type_level: bool
) -> np.ndarray | None:
    """(n,) bool: each occurrence's purity vote (see the module docstring); None without gold senses."""
    if not gold_senses(senses):
        return None
    return word_form_votes(forms, senses) if type_level else knn_sense_votes(vectors, senses, PURITY_K)


def slice_table(
    slices: Mapping[str, Sequence[int]], senses: Sequence, votes: Mapping[str, np.ndarray | None]
) -> pd.DataFrame:
    """One row per slice ({name: member indices}, e.g. ``ALL_NAME`` first): ``SLICE_COLUMNS`` and one
    column per ``votes`` entry ({"5-NN purity": votes}, or one per model), the votes' share among the
    members; senses and votes None where there are no gold senses."""
    senses = np.asarray([None if s is None or pd.isna(s) else str(s) for s in senses], dtype=object)
    rows = []
    for name, members in slices.items():
        members = np.asarray(members, dtype=np.int64)
        row = {"slice": name, "size": len(members), "share of all": len(members) / len(senses)}
        labelled = [s for s in senses[members] if s is not None]
        if labelled and len(members):
            sense, count = Counter(labelled).most_common(1)[0]
            row.update({"majority sense": sense, "majority share": count / len(members)})
        else:
            row.update({"majority sense": None, "majority share": None})
        for column, vote in votes.items():
            row[column] = float(vote[members].mean()) if vote is not None and len(members) else None
        rows.append(row)
    return pd.DataFrame(rows, columns=[*SLICE_COLUMNS, *votes])


def slices_html(table: pd.DataFrame) -> str:
    """``slice_table`` as a small HTML table (shares to two decimals, sizes with a thousands separator, empty
    columns left out); every text escaped, and no cell wraps inside a word."""
    table = table.dropna(axis="columns", how="all")

    def cell(value) -> str:
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return ""
        if isinstance(value, (int, np.integer)):
            return f"{value:,}"
        return f"{value:.2f}" if isinstance(value, float) else html.escape(str(value))

    numeric = {column for column in table.columns if column not in ("slice", "majority sense")}
    header = "".join(f"<th>{html.escape(column)}</th>" for column in table.columns)
    rows = "".join(
        "<tr>" + "".join(
            f"<td class='{'num' if column in numeric else 'text'}'>{cell(value)}</td>"
            for column, value in zip(table.columns, row, strict=True)
        ) + "</tr>"
        for row in table.itertuples(index=False)
    )  # fmt: skip
    style = (
        "<style>.slices{border-collapse:collapse;font-size:13px;line-height:1.35;margin:2px 0 6px}"
        ".slices th,.slices td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
        ".slices th,.slices .num{white-space:nowrap}.slices .num{text-align:right;font-variant-numeric:tabular-nums}"
        ".slices .text{overflow-wrap:normal;word-break:normal}.slices-box{overflow-x:auto}</style>"
    )
    return f"{style}<div class='slices-box'><table class='slices'><tr>{header}</tr>{rows}</table></div>"
