"""What the pages share: page setup, model defaults (bundled models, overridable by environment
variables), cached model loading, and the encoder picker."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from ..analysis.vectors import stack_layer_blocks
from .settings import COVE_MODEL_ENV, ELMO_MODEL_ENV, SENSE_DATA_ENV

ENCODERS = ("elmo", "cove")
MODEL_ENV = {"elmo": ELMO_MODEL_ENV, "cove": COVE_MODEL_ENV}
ASSETS = Path(__file__).resolve().parent.parent / "assets"


class ModelUnavailable(RuntimeError):
    """A model the page needs is not installed or cannot be loaded; the message says what to do."""


def configure_page(title: str = "spacy-contextual") -> None:
    st.set_page_config(page_title=title, page_icon="🔎", layout="wide")


def default_model(kind: str) -> str:
    """The model a page starts with: the environment variable, else the bundled model ("default")."""
    return os.environ.get(MODEL_ENV[kind], "default")


def bundled_model_dir(kind: str) -> Path:
    return ASSETS / kind


def cove_available() -> bool:
    return importlib.util.find_spec("spacy_contextual.embedders.cove") is not None


@st.cache_resource(show_spinner="Loading the encoder…")
def load_encoder(kind: str, model: str):
    """The ELMo or CoVe embedder for a model directory ("default" = the bundled one)."""
    model = model.strip() or "default"
    if model != "default" and not Path(model).is_dir():
        raise ModelUnavailable(f"{model} is not a directory: give the path of a saved {kind} model, or 'default'.")
    if kind == "elmo":
        from ..embedders.elmo import ElmoEmbedder

        if model == "default" and not (bundled_model_dir("elmo") / "config.json").is_file():
            raise ModelUnavailable(
                f"The bundled ELMo is not installed ({bundled_model_dir('elmo')} is missing). Enter the path of an "
                f"ELMo model directory in the sidebar, or set {ELMO_MODEL_ENV}."
            )
        try:
            return ElmoEmbedder.load(model)
        except (OSError, ValueError, KeyError) as error:
            raise ModelUnavailable(f"Could not load an ELMo model from {model}: {error}") from None
    if kind == "cove":
        if not cove_available():
            raise ModelUnavailable(
                "CoVe is not part of this installation (spacy_contextual.embedders.cove is missing)."
            )
        from ..embedders.cove import CoveEmbedder

        if model == "default" and not (bundled_model_dir("cove") / "config.json").is_file():
            raise ModelUnavailable(
                f"The bundled CoVe model is not installed ({bundled_model_dir('cove')} is missing). Enter the path of "
                "a "
                f"CoVe model directory in the sidebar, or set {COVE_MODEL_ENV}."
            )
        try:
            return CoveEmbedder.load(None if model == "default" else model)
        except (OSError, ValueError, KeyError) as error:
            raise ModelUnavailable(
                f"Could not load a CoVe model from {model}: {error}. Enter the path of a CoVe model directory, "
                f"or set {COVE_MODEL_ENV}."
            ) from None
    raise ModelUnavailable(f"unknown encoder '{kind}': choose one of {', '.join(ENCODERS)}")


def layered_embed(kind: str, model: str) -> Callable:
    """The encoder as ``token lists -> arrays (n_layers, n, width)``; CoVe's layers are
    0 = GloVe (zero-padded to the LSTM width), 1 = CoVe-1, 2 = CoVe-2."""
    encoder = load_encoder(kind, model)
    if kind == "elmo":
        return encoder.embed_sentences
    static, hidden = encoder.source_vectors.shape[1], encoder.encoder.output_dim
    blocks = [slice(0, static), slice(static, static + hidden), slice(static + hidden, static + 2 * hidden)]
    return lambda sentences: [stack_layer_blocks(a, blocks) for a in encoder.embed_sentences(sentences)]


def encoder_picker(key: str) -> tuple[str, str]:
    """Sidebar widgets: the encoder kind and its model directory."""
    with st.sidebar:
        kind = st.radio("Encoder", ENCODERS, horizontal=True, key=f"{key}_encoder")
        model = st.text_input(
            "Model directory",
            value=default_model(kind),
            key=f"{key}_model_{kind}",
            help="'default' = the bundled model",
        )
    return kind, model


def encoder_or_stop(kind: str, model: str):
    try:
        return load_encoder(kind, model)
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
