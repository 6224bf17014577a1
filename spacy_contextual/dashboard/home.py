"""Home: what the dashboard shows and which models it found."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ..formats.bundled import resolve_model_dir
from .common import default_model
from .settings import COVE_MODEL_ENV, ELMO_MODEL_ENV, PIPELINE_ENV

PAGES = [
    (
        "Sense explorer",
        "every occurrence of a word in a corpus, projected and clustered; static next to contextual; nearest "
        "occurrences; projector export",
    ),
    ("Layer weights", "the softmax(s_j) and γ each listener of a trained pipeline learned"),
    ("CoVe attention", "translate an English sentence and see the decoder's attention α"),
    ("Layer probe", "word-sense 1-NN accuracy per layer against the most-frequent-sense baseline"),
]


def model_status() -> pd.DataFrame:
    """Which model directory each encoder's pages start with, and whether it is there."""
    rows = []
    for kind, env in (("elmo", ELMO_MODEL_ENV), ("cove", COVE_MODEL_ENV)):
        model = default_model(kind)
        try:
            where, note = str(resolve_model_dir(kind, model)), "found"
        except FileNotFoundError as error:
            where, note = model, f"{error}; or set {env}"
        rows.append({"encoder": kind, "model": where, "status": note})
    return pd.DataFrame(rows)


def render() -> None:
    st.title("spacy-contextual dashboard")
    st.markdown(
        "ELMo and CoVe contextual word vectors, looked at closely. Pick a page in the sidebar:\n\n"
        + "\n".join(f"- **{name}**: {text}" for name, text in PAGES)
    )
    st.subheader("Models")
    st.dataframe(model_status(), hide_index=True, key="home_models")
    st.caption(f"A default trained pipeline for the Layer weights page can be named in {PIPELINE_ENV}.")
