"""One store of occurrence vectors per (encoder, model, corpus), shared by every page, filled with progress:
an estimate before a large embedding (measured on this machine), then a bar with a token count from its
start and the time left once there is a rate. Each update of the bar is a Streamlit yield point, so an
embedding whose session ended (the tab closed, a rerun) stops after the chunk it is in:
``OccurrenceStore`` cuts the work into chunks of about two seconds."""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from ..analysis.occurrence_store import OccurrenceStore
from .encoder_choice import cached_encoder

LARGE_EMBEDDING = 500  # sentences: an embedding this large says how long it will take before it starts


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
