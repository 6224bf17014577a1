"""Home: what the dashboard shows and which models it found."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ..analysis.model_loading import model_status
from .encoder_choice import ENCODERS, MODEL_ENV, default_model
from .environment_names import PIPELINE_ENV

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
        "translate an English sentence and audit the decoder's attention α: coverage, how peaked each row is, "
        "OOV words and what each <unk> copied, heatmap or lines, HTML export",
    ),
    (
        "Layer probe",
        "word-sense 1-NN accuracy per layer with error bars against the most-frequent-sense baseline; click a bar to "
        "open the word in the Sense explorer",
    ),
    ("Compare models", "one word's occurrences under two encoders, aligned, and whose neighbours changed most"),
]


def models_found() -> pd.DataFrame:
    """Which model directory each encoder's pages start with, and whether it is there."""
    rows = model_status({kind: default_model(kind) for kind in ENCODERS})
    for row in rows:
        if row["status"] != "found":
            row["status"] += f"; or set {MODEL_ENV[row['encoder']]}"
    return pd.DataFrame(rows)


def render() -> None:
    st.title("spacy-contextual dashboard")
    st.markdown(
        "ELMo and CoVe contextual word vectors, looked at closely. Pick a page in the sidebar:\n\n"
        + "\n".join(f"- **{name}**: {text}" for name, text in PAGES)
    )
    st.subheader("Models")
    st.dataframe(models_found(), hide_index=True, key="home_models")
    st.caption(f"A default trained pipeline for the Layer weights page can be named in {PIPELINE_ENV}.")
