"""Every page's setup: the page config and the CSS that keeps each page readable at 800 px, and the
environment variables read once per run (a bad value stops the page with its one line)."""

from __future__ import annotations

import streamlit as st

from ..errors import ContextualError

# Every page reads at 800 px: a row of columns that holds a chart wraps (each column at least 400 px) instead of
# squeezing the chart, options of a radio never break inside a word, the sidebar narrows in a narrow window; below
# 1400 px the main area's side padding shrinks, so that a chart and the neighbour list stay side by side at 1280 px.
RESPONSIVE_CSS = """<style>
[data-testid="stHorizontalBlock"]:has(.stPlotlyChart) { flex-wrap: wrap; }
[data-testid="stHorizontalBlock"]:has(.stPlotlyChart) > [data-testid="stColumn"] { min-width: min(100%, 400px); }
[data-testid="stRadio"] [role="radiogroup"] label p { white-space: nowrap; }
@media (max-width: 1400px) {
  [data-testid="stMainBlockContainer"] { padding-left: 2rem; padding-right: 2rem; }
}
@media (max-width: 960px) {
  section[data-testid="stSidebar"] { width: 230px !important; min-width: 230px !important; }
  [data-testid="stMainBlockContainer"] { padding-left: 1rem; padding-right: 1rem; }
}
</style>"""


def configure_page(title: str = "spacy-contextual") -> None:
    st.set_page_config(page_title=title, page_icon="🔎", layout="wide")
    st.html(RESPONSIVE_CSS)


def setting(variable):
    """The value of one of ``spacy_contextual.environment``' variables; a bad value stops the page with its one line."""
    try:
        return variable.get()
    except ContextualError as error:
        st.error(str(error))
        st.stop()
