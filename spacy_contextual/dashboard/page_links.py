"""The links between pages: one page opens another and hands it a state, read there once."""

from __future__ import annotations

import streamlit as st


def open_page(name: str, state: dict) -> None:
    """Switch to page ``name`` ("sense_explorer", ...) and hand it ``state`` (read once with ``opened``)."""
    st.session_state[f"{name}_opened"] = state
    st.switch_page(PAGES.get(name) or PAGE_FILES[name])


def opened(name: str) -> dict | None:
    """What ``open_page`` handed this page, once."""
    return st.session_state.pop(f"{name}_opened", None)


# the pages of ``app/`` (file-based); ``dashboard/main.py`` registers its st.Page objects in PAGES instead
PAGE_FILES = {
    "sense_explorer": "pages/1_Sense_explorer.py",
    "layer_weights": "pages/2_Layer_weights.py",
    "cove_attention": "pages/3_CoVe_attention.py",
    "layer_probe": "pages/4_Layer_probe.py",
    "compare_models": "pages/5_Compare_models.py",
}
PAGES: dict = {}
