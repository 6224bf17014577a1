"""User text inside Streamlit markdown (alerts, captions, option labels): every ASCII punctuation character
is backslash-escaped (CommonMark allows it for all of them), so that ``**``, ``_``, ``$`` (LaTeX),
``:red[...]`` or ``:smile:`` (Streamlit's directives) and ``<b>`` in a typed sentence or word are shown
as typed, never rendered. Streamlit also turns ``http://...``, ``www.`` and ``name@host`` in the text into
links after the markdown is read (escapes do not stop it), so a word joiner (U+2060, invisible) goes
before each ``://``, ``www.`` dot and ``@``: the reader sees the same text, and no link is made of it."""

from __future__ import annotations

import re

PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # the ASCII punctuation ranges
LINK_MAKERS = re.compile(r"(?i)(?=://)|(?<=www)(?=\.)|(?=@)")  # where an autolink would start or join
WORD_JOINER = "\u2060"


def escape_markdown(text: str) -> str:
    return PUNCTUATION.sub(r"\\\1", LINK_MAKERS.sub(WORD_JOINER, str(text)))
