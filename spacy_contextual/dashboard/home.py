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
        "every occurrence of a word, projected (PCA live, UMAP on demand) and clustered; click a point to mark its "
        "nearest occurrences and read them as aligned KWIC lines; every layer side by side with its sense purity; "
        "the nearest tokens of any word; projector export",
    ),
    ("Layer weights", "the softmax(s_j) and γ each listener of a trained pipeline learned (a shipped EWT example)"),
    (
        "CoVe attention",
        "translate an English sentence and audit the decoder's attention α: coverage, OOV words, heatmap or lines, "
        "HTML export",
    ),
    (
        "Layer probe",
        "word-sense 1-NN accuracy per layer with error bars against the most-frequent-sense baseline; click a bar to "
        "open the word in the Sense explorer",
    ),
    ("Compare models", "one word's occurrences under two encoders, aligned, and whose neighbours changed most"),
]


def model_status() -> pd.DataFrame:
    """Which model directory each encoder's pages start with, and whether it is there."""
    rows = []
    for kind, env in (("elmo", ELMO_MODEL_ENV), ("cove", COVE_MODEL_ENV)):
        model = default_model(kind)
        try:
            where, note = str(resolve_model_dir(kind, model)), "found"
        except (OSError, ValueError) as error:  # missing, damaged, or a catalog name not cached while offline
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
