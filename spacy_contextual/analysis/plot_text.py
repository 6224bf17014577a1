"""Text from the data (senses, word forms, sentences, component names) as plotly shows it literally.

Plotly draws a subset of HTML in every text it renders (legend entries, hover labels, point labels, tick
labels, titles): ``<a href>`` becomes a clickable link, ``<b>``, ``<br>``, ``<span style>`` are obeyed. A
sense label is data, never markup, so every such text is escaped first (``escaped``); plotly turns the
entities back into the characters, shown as typed. A name is never spliced into a hover template either
(``%{...}`` in it would be read as a field): templates name the trace with ``%{fullData.name}``."""

from __future__ import annotations

import html


def escaped(value) -> str:
    """``value`` as text that plotly shows literally."""
    return html.escape(str(value), quote=False)
