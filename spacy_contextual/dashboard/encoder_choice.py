"""The encoder a page uses: its kind and model (the bundled models, overridable by environment variables,
a name or a folder typed in the sidebar, or the URL's ``encoder`` and ``model``), loaded once per server
process."""

from __future__ import annotations

import streamlit as st

from .. import environment
from ..analysis.model_loading import KINDS, Embedder, ModelUnavailable, load_model, name_notice
from ..kinds import a_model
from . import session
from .page_setup import setting
from .text_inputs import MAX_PATH_CHARS, path_input

ENCODERS = KINDS
MODEL_SETTINGS = {"elmo": environment.ELMO_MODEL, "cove": environment.COVE_MODEL}
MODEL_ENV = {kind: variable.name for kind, variable in MODEL_SETTINGS.items()}
MODEL_FIELD_HELP = (
    "'default' = the bundled model; a name from `spacy-contextual models` (downloaded once) or ./NAME for the "
    "folder NAME here"
)


def default_model(kind: str) -> str:
    """The model a page starts with: the environment variable, else the bundled model ("default")."""
    return setting(MODEL_SETTINGS[kind])


@st.cache_resource(show_spinner="Loading the encoder…")
def cached_encoder(kind: str, model: str) -> Embedder:
    """``analysis.model_loading.load_model``, once per server process; a model that cannot be loaded says
    where to give another."""
    try:
        return load_model(kind, model)
    except ModelUnavailable as error:
        raise ModelUnavailable(
            f"{error} Enter a model name or the folder of {a_model(kind)} in the sidebar, or set "
            f"{MODEL_ENV.get(kind, 'the model environment variable')}."
        ) from None


def encoder_picker(key: str, label: str = "Encoder", kind_index: int = 0, shared: bool = True) -> tuple[str, str]:
    """Sidebar widgets: the encoder kind and its model (a name or a folder); ``shared``: the session's one encoder
    and model per kind (the Sense explorer and the Layer probe; also read from the URL's ``encoder`` and
    ``model``), else this picker's own (Compare's A, B)."""
    encoder_name = session.ENCODER if shared else f"{key}_encoder"
    if shared:
        kind = session.from_url("encoder")
        if kind in ENCODERS:
            session.put(session.ENCODER, kind)
            model = session.from_url("model")
            if model:
                session.put(session.model_name(kind), model[:MAX_PATH_CHARS])
    with st.sidebar:
        kind = st.radio(
            label, ENCODERS, horizontal=True,
            key=session.bind(f"{key}_encoder", encoder_name, ENCODERS[kind_index], ENCODERS),
        )  # fmt: skip
        model_key = f"{key}_model_{kind}"
        model = path_input(
            f"{label}: model (name or folder)" if label != "Encoder" else "Model (name or folder)",
            key=session.bind(model_key, session.model_name(kind) if shared else model_key, default_model(kind)),
            help=MODEL_FIELD_HELP,
        )
    return kind, model


def show_name_notice(kind: str, model: str) -> None:
    """The notice a model name carries (a folder here has the name of the model used), as the commands
    print it."""
    notice = name_notice(kind, model)
    if notice is not None:
        st.warning(notice)


def encoder_or_stop(kind: str, model: str) -> Embedder:
    show_name_notice(kind, model)
    try:
        return cached_encoder(kind, model)
    except ModelUnavailable as error:
        st.error(str(error))
        st.stop()
