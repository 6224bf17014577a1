"""User text inside Streamlit markdown (alerts, captions): every ASCII punctuation character is
backslash-escaped (CommonMark allows it for all of them), so that ``**``, ``_``, ``$`` (LaTeX),
``:red[...]`` or ``:smile:`` (Streamlit's directives) and ``<b>`` in a typed sentence or word are shown
as typed, never rendered."""

from __future__ import annotations

import re

PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # the ASCII punctuation ranges


def escape_markdown(text: str) -> str:
    return PUNCTUATION.sub(r"\\\1", str(text))
