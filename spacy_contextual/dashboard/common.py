"""What the pages share: page setup, model defaults (bundled models, overridable by environment
variables), cached model loading, the encoder picker, and the length caps of typed paths and words
(messages quote at most 80 characters of what was typed: ``errors.quoted``)."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from ..embedders import Embedder, load_encoder
from ..errors import quoted
from ..formats.bundled import KINDS
from .settings import COVE_MODEL_ENV, ELMO_MODEL_ENV, SENSE_DATA_ENV

ENCODERS = KINDS
MODEL_ENV = {"elmo": ELMO_MODEL_ENV, "cove": COVE_MODEL_ENV}
MAX_PATH_CHARS = 1024  # a typed path; longer ones cannot be a real directory on common file systems
MAX_WORD_CHARS = 100  # a word to look up


class ModelUnavailable(RuntimeError):
    """A model the page needs cannot be loaded; the message says what to do."""


def configure_page(title: str = "spacy-contextual") -> None:
    st.set_page_config(page_title=title, page_icon="🔎", layout="wide")


def default_model(kind: str) -> str:
    """The model a page starts with: the environment variable, else the bundled model ("default")."""
    return os.environ.get(MODEL_ENV[kind], "default")


@st.cache_resource(show_spinner="Loading the encoder…")
def cached_encoder(kind: str, model: str) -> Embedder:
    """``embedders.load_encoder``, once per server process; its arrays are (n_layers, n, width) for
    ELMo and CoVe alike."""
    try:
        return load_encoder(kind, model.strip() or "default")
    except (OSError, ValueError) as error:
        raise ModelUnavailable(
            f"Could not load a {kind} model from {quoted(model)}: {error}. Enter the path of a {kind} model "
            f"directory in the sidebar, or set {MODEL_ENV.get(kind, 'the model environment variable')}."
        ) from None


def path_input(label: str, **kwargs) -> str:
    """A text input for a path, at most ``MAX_PATH_CHARS`` long."""
    return st.text_input(label, max_chars=MAX_PATH_CHARS, **kwargs)


def word_input(label: str, **kwargs) -> str:
    """A text input for one word, at most ``MAX_WORD_CHARS`` long."""
    return st.text_input(label, max_chars=MAX_WORD_CHARS, **kwargs)


def encoder_picker(key: str) -> tuple[str, str]:
    """Sidebar widgets: the encoder kind and its model directory."""
    with st.sidebar:
        kind = st.radio("Encoder", ENCODERS, horizontal=True, key=f"{key}_encoder")
        model = path_input(
            "Model directory",
            value=default_model(kind),
            key=f"{key}_model_{kind}",
            help="'default' = the bundled model",
        )
    return kind, model


def encoder_or_stop(kind: str, model: str) -> Embedder:
    try:
        return cached_encoder(kind, model)
    except ModelUnavailable as error:
        st.error(str(error))
        st.stop()


def sense_data_dir() -> Path | None:
    """Where sense-labelled JSONL files are looked for: the environment variable, else ../shared/data/senses
    next to a source checkout, else none."""
    if os.environ.get(SENSE_DATA_ENV):
        return Path(os.environ[SENSE_DATA_ENV])
    checkout = Path(__file__).resolve().parents[3] / "shared" / "data" / "senses"
    return checkout if checkout.is_dir() else None
