"""What the pages share: page setup, model defaults (bundled models, overridable by environment
variables), cached model loading, one store of occurrence vectors per (encoder, model, corpus) shared by
every page (an estimate before a large embedding, measured on this machine in tokens per second; every
embedding shows a progress bar with a token count from its start, and the time left once there is a
rate; each update of the bar is a Streamlit yield point, so an embedding whose session ended (the tab
closed, a rerun) stops after the chunk it is in: ``occurrence_store`` cuts the work into chunks of about
two seconds), the encoder picker (its kind and model also from the URL), layer names, widget keys that
name the context their options come from (their values kept across pages by ``session``), and the links
between pages (a click, a box or a lasso on one chart read back before it is redrawn; one page opening
another with a state), and the length caps of typed paths and words (messages quote at most 80
characters of what was typed: ``errors.quoted``)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import streamlit as st

from .. import environment
from ..analysis.model_loading import KINDS, Embedder, ModelUnavailable, load_model, name_notice
from ..analysis.neighbours import kwic
from ..analysis.occurrence_store import OccurrenceStore
from ..analysis.occurrence_vectors import MIX
from ..analysis.sense_probe import TYPE_LEVEL_LAYER
from ..errors import ContextualError
from ..kinds import a_model
from . import session

ENCODERS = KINDS
MODEL_SETTINGS = {"elmo": environment.ELMO_MODEL, "cove": environment.COVE_MODEL}
MODEL_ENV = {kind: variable.name for kind, variable in MODEL_SETTINGS.items()}
MAX_PATH_CHARS = 1024  # a typed path; longer ones cannot be a real directory on common file systems
MAX_WORD_CHARS = 200  # a word to look up, or a few comma-separated forms of it
LARGE_EMBEDDING = 500  # sentences: an embedding this large says how long it will take before it starts
MODEL_FIELD_HELP = (
    "'default' = the bundled model; a name from `spacy-contextual models` (downloaded once) or ./NAME for the "
    "folder NAME here"
)


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


@st.cache_resource(max_entries=8, show_spinner=False)
def occurrence_store(kind: str, model: str, corpus_digest: str, _records) -> OccurrenceStore:
    """The one store of occurrence vectors of (encoder, model, corpus): every page that looks at this
    corpus with this model reads and fills the same one (the records themselves are not hashed)."""
    return OccurrenceStore(cached_encoder(kind, model).embed_sentences, _records)


def occurrence_layers(kind: str, model: str, digest: str, records, pairs, confirm: str | None = None) -> np.ndarray:
    """(len(pairs), n_layers, dim) from the shared store, embedding what is missing with a progress bar.
    With ``confirm`` (a button key), an embedding of more than ``LARGE_EMBEDDING`` sentences first says how
    long it will take and waits for the button."""
    store = occurrence_store(kind, model, digest, records)
    if confirm is not None and not st.session_state.get(confirm):  # not in the run the button started
        estimate = embedding_estimate(store, pairs)
        if estimate is not None:
            st.info(f"Embedding with {kind} takes {estimate}; the vectors are then kept for every page.")
            if not st.button(f"Embed {len(store.missing_sentences(pairs)):,} sentences", key=confirm, type="primary"):
                st.stop()
    sentences = len(store.missing_sentences(pairs))
    return store.layers(pairs, progress=progress_bar(f"Embedding {sentences:,} sentences with {kind}"))


def embedding_estimate(store: OccurrenceStore, pairs) -> str | None:
    """ "about 3 min 40 s for 4,269 sentences (111,000 tokens) on this machine (1.9 ms a token, measured on
    this corpus)" when more than ``LARGE_EMBEDDING`` sentences are missing (measuring the cost on sentences
    drawn across the file first, if need be: ``OccurrenceStore.calibrate``), else None."""
    if len(store.missing_sentences(pairs)) <= LARGE_EMBEDDING:
        return None
    if store.cost is None:
        with st.spinner("Timing the encoder on sentences drawn across the file…"):
            store.calibrate(pairs)
    missing, tokens = len(store.missing_sentences(pairs)), store.missing_tokens(pairs)
    return (
        f"about {duration(store.estimate_seconds(pairs))} for {missing:,} sentences ({tokens:,} tokens) on this "
        f"machine ({1000 * store.cost:.2f} ms a token, measured on this corpus)"
    )


def duration(seconds: float) -> str:
    """ "40 s", "2 min 20 s": a rough duration, rounded to 10 s above a minute."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    seconds = round(seconds / 10) * 10
    return f"{seconds // 60:.0f} min {seconds % 60:.0f} s" if seconds % 60 else f"{seconds // 60:.0f} min"


def progress_bar(label: str):
    """A ``progress(done_tokens, total_tokens)`` callback that draws a bar with the count from its first call
    (and the time left, at the rate so far, from the second) and removes it when done. Each call updates the
    bar: a yield point where Streamlit stops the run of a session that ended or reruns."""
    start, bar = time.perf_counter(), None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = st.progress(0.0)
        elapsed = time.perf_counter() - start
        left = f", about {duration(elapsed / done * (total - done))} left" if 0 < done < total else ""
        bar.progress(done / total if total else 1.0, text=f"{label}: {done:,} of {total:,} tokens{left}")
        if done >= total:
            bar.empty()

    return progress


OCCURRENCE_CONTEXT = 12  # characters either side of the word in an occurrence's label


def occurrence_label(records, occurrences, index: int) -> str:
    """ "#12: Can you play the …": an occurrence as a select box shows it, short enough to fit at 800 px."""
    record, position = int(occurrences["record"].iloc[index]), int(occurrences["position"].iloc[index])
    left, word, right = kwic(records[record]["tokens"], position, OCCURRENCE_CONTEXT)
    return f"#{index}: " + " ".join(part for part in (left, word, right) if part)


def context_key(name: str, *context) -> str:
    """The key of a widget whose options depend on ``context`` (word, corpus, encoder, model): a new
    context is a new widget, so it can never show a value chosen in an earlier one."""
    return f"{name}_{hashlib.sha1(repr(context).encode()).hexdigest()[:10]}"


def path_input(label: str, **kwargs) -> str:
    """A text input for a path, at most ``MAX_PATH_CHARS`` long."""
    return st.text_input(label, max_chars=MAX_PATH_CHARS, **kwargs)


def word_input(label: str, **kwargs) -> str:
    """A text input for a word (or a few comma-separated forms), at most ``MAX_WORD_CHARS`` long."""
    return st.text_input(label, max_chars=MAX_WORD_CHARS, **kwargs)


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


def sense_data_dir() -> Path | None:
    """Where sense-labelled JSONL files are looked for: the environment variable, else ../shared/data/senses
    next to a source checkout, else none."""
    folder = setting(environment.SENSE_DATA)
    if folder is not None:
        return folder
    checkout = Path(__file__).resolve().parents[3] / "shared" / "data" / "senses"
    return checkout if checkout.is_dir() else None


def layer_label(labels: list[str], layer, mix_name: str = "uniform") -> str:
    """ "char-CNN (type-level)", "LSTM-2", "mix (uniform)": a layer choice as the controls show it."""
    if layer == MIX:
        return f"mix ({mix_name})"
    return f"{labels[layer]} (type-level)" if layer == TYPE_LEVEL_LAYER else labels[layer]


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
