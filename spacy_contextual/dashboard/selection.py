"""What a user selects on a page of occurrences, shared by the Sense explorer and Compare models: the query
occurrence as the URL names it (``occurrence=record:position``, the same occurrence whatever the sample), the
search row (a text, the field it is looked for in, regex or not; in the URL as ``search``,
``by`` and ``regex``) and the slice (the last box or lasso drawn on one of the page's scatters, kept per
word and corpus until cleared), scored beside the whole set (``analysis.slices``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from ..analysis.search import FIELDS, SearchError, search_matches
from ..analysis.slices import ALL_NAME, slice_table, slices_html
from . import session
from .chart_events import chart_region
from .text_inputs import context_key, word_input

SLICE_NAME = "slice (box or lasso)"


@dataclass
class Selection:
    search: str  # the search text, stripped ("" for none)
    field: str  # what it is looked for in: a key of ``analysis.search.FIELDS``
    as_regex: bool
    matches: np.ndarray  # the occurrences that match, ascending
    slice: list[int] | None  # the occurrences of the slice, or None

    def parameters(self) -> dict[str, str | None]:
        """The URL's ``search``, ``by`` and ``regex``."""
        return {
            "search": self.search, "by": self.field if self.search else None,
            "regex": "1" if self.search and self.as_regex else None,
        }  # fmt: skip

    def slices(self) -> dict[str, Sequence[int]]:
        """The search matches and the slice, named as the slice table shows them."""
        named: dict[str, Sequence[int]] = {}
        if len(self.matches):
            how = "matches" if self.as_regex else "contains"
            named[f"search: {self.field} {how} '{self.search}'"] = self.matches
        if self.slice:
            named[SLICE_NAME] = self.slice
        return named


def select(key: str, occurrences: pd.DataFrame, charts: Sequence[str], context) -> Selection:
    """The search row (its values from the URL the first time) and the slice of ``charts`` (chart keys)."""
    for parameter, name in (("search", f"{key}_search"), ("by", f"{key}_search_by")):
        value = session.from_url(parameter)
        if value is not None and (parameter != "by" or value in FIELDS):
            session.put(name, value)
    if session.from_url("regex") == "1":
        session.put(f"{key}_search_regex", True)
    row = st.columns([2.2, 1.2, 0.9], vertical_alignment="bottom")
    with row[0]:
        text = word_input("Search the points", key=session.bind(f"{key}_search", default=""),
                          placeholder="a form, a sense, or words of the sentence")  # fmt: skip
    field = row[1].selectbox("in", list(FIELDS), key=session.bind(f"{key}_search_by", default="form",
                                                                  options=list(FIELDS)))  # fmt: skip
    as_regex = row[2].checkbox("regex", key=session.bind(f"{key}_search_regex", default=False),
                               help="a regular expression (case-insensitive), found anywhere in the text")  # fmt: skip
    try:
        matches = search_matches(occurrences, text, field, as_regex)
    except SearchError as error:
        st.error(str(error))
        matches = np.zeros(0, dtype=np.int64)
    if text.strip():
        st.caption(f"{len(matches):,} of {len(occurrences):,} occurrences match, marked ◻ on the scatter.")
    slice_key = context_key(f"{key}_slice", *context)
    for chart in charts:
        region, last = chart_region(chart), f"{slice_key}_{chart}_last_region"
        if region is not None and region != st.session_state.get(last):
            st.session_state[slice_key] = region
        st.session_state[last] = region
    return Selection(text.strip(), field, as_regex, matches, st.session_state.get(slice_key))


def render_slices(
    key: str, selection: Selection, senses: Sequence, votes: Mapping[str, np.ndarray | None], context
) -> None:
    """The search matches and the slice scored beside the whole set (nothing while there are neither), and a
    button that clears the slice."""
    named = selection.slices()
    if not named:
        st.caption("Draw a box or a lasso on the scatter (its toolbar) to make a slice, scored here beside the whole.")
        return
    table = slice_table({ALL_NAME: np.arange(len(senses)), **named}, senses, votes)
    with st.container(key=f"{key}_slices"):
        st.html(slices_html(table))
    if selection.slice and st.button("Clear the slice", key=f"{key}_clear_slice"):
        st.session_state[context_key(f"{key}_slice", *context)] = None
        st.rerun()


def occurrence_parameter(occurrences: pd.DataFrame, index: int) -> str:
    """The URL's ``occurrence``: "record:position", the same occurrence whatever the sample."""
    return f"{int(occurrences['record'].iloc[index])}:{int(occurrences['position'].iloc[index])}"


def occurrence_from_url(occurrences: pd.DataFrame) -> int | None:
    """The index of the URL's ``occurrence`` among ``occurrences``, if it is one of them."""
    value = session.from_url("occurrence") or ""
    record, _, position = value.partition(":")
    if not (record.isdigit() and position.isdigit()):
        return None
    found = np.flatnonzero((occurrences["record"] == int(record)) & (occurrences["position"] == int(position)))
    return int(found[0]) if len(found) else None
