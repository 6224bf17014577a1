"""Search the occurrences as the Embedding Projector's search box does: the rows whose word form, gold
sense or sentence contains the text (case-insensitive), or matches it as a regular expression.

A regular expression runs under one time budget for the whole search (``SEARCH_SECONDS``, through the
``regex`` module's timeout), so a pattern that backtracks without end is refused in one line instead of
holding the server; an invalid one is refused naming the error."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import regex

from ..errors import ContextualError, quoted

FIELDS = {"form": "token", "sense": "sense", "sentence": "sentence"}  # what a user searches: occurrence column
SEARCH_SECONDS = 2.0
MAX_PATTERN_CHARS = 200


class SearchError(ContextualError):
    """A search text that cannot be used; the message says why and what to do."""


def search_matches(occurrences: pd.DataFrame, text: str, field: str = "form", as_regex: bool = False) -> np.ndarray:
    """The indices (ascending) of the occurrences whose ``field`` ("form", "sense" or "sentence") contains
    ``text`` (case-insensitive) or, with ``as_regex``, matches it anywhere; empty text: none."""
    if field not in FIELDS:
        raise SearchError(f"cannot search by {quoted(field)}: choose one of {', '.join(FIELDS)}")
    text = (text or "").strip()
    if not text:
        return np.zeros(0, dtype=np.int64)
    if len(text) > MAX_PATTERN_CHARS:
        raise SearchError(f"The search text has {len(text):,} characters; the limit is {MAX_PATTERN_CHARS}.")
    values = ["" if pd.isna(value) else str(value) for value in occurrences[FIELDS[field]]]
    if not as_regex:
        needle = text.casefold()
        return np.array([i for i, value in enumerate(values) if needle in value.casefold()], dtype=np.int64)
    try:
        pattern = regex.compile(text, regex.IGNORECASE | regex.VERSION0)
    except regex.error as error:
        raise SearchError(
            f"{quoted(text)} is not a regular expression ({error}): fix it, or search for plain text."
        ) from None
    deadline = time.monotonic() + SEARCH_SECONDS
    hits = []
    try:
        for i, value in enumerate(values):
            if pattern.search(value, timeout=max(deadline - time.monotonic(), 1e-3)):
                hits.append(i)
    except TimeoutError:
        raise SearchError(
            f"{quoted(text)} took more than {SEARCH_SECONDS:.0f} s on {len(values):,} rows (a pattern that "
            "backtracks, such as (a+)+): simplify it, or search for plain text."
        ) from None
    return np.array(hits, dtype=np.int64)
