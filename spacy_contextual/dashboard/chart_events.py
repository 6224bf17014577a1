"""What the user did on a chart in the previous run (a click, a box or a lasso), read before the chart is
drawn again, and a widget that follows a new click."""

from __future__ import annotations

import streamlit as st


def clicked_point(key: str) -> list | None:
    """The customdata of the point clicked on the chart with ``key`` in the previous run, read before
    the chart is drawn again (so a page can highlight the click on the new figure); None for a box or
    lasso (``chart_region``)."""
    selection = (st.session_state.get(key) or {}).get("selection") or {}
    if selection.get("box") or selection.get("lasso"):
        return None
    for point in selection.get("points", []):
        if point.get("customdata") is not None:
            return list(point["customdata"])
    return None


def chart_region(key: str) -> list[int] | None:
    """The occurrences (``customdata[0]`` of its points, each once, ascending) of the box or lasso drawn on
    the chart with ``key`` in the previous run; None when the last selection was no box or lasso."""
    selection = (st.session_state.get(key) or {}).get("selection") or {}
    if not (selection.get("box") or selection.get("lasso")):
        return None
    return sorted({int(p["customdata"][0]) for p in selection.get("points", []) if p.get("customdata") is not None})


def follow_click(chart_key: str, state_key: str, value) -> None:
    """Set ``state_key`` (a widget's key) to ``value`` when it comes from a new click on ``chart_key``:
    a selection kept from before must not undo a later choice made in the widget itself."""
    last = f"{chart_key}_last_click"
    if value is not None and value != st.session_state.get(last):
        st.session_state[state_key] = value
    st.session_state[last] = value
