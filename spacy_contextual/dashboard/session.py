"""One session state for every page: the values a user chose (word, corpus, encoder, models, the layer by
position, the attention sentence, the occurrence chosen per word, every page's controls) live under
names in one plain dict in ``st.session_state``, which Streamlit never clears, while a widget's own state
is dropped whenever a run does not draw it, i.e. whenever another page is open.

Contract of ``bind(key, name, default, options)``, called just before widget ``key`` is drawn (without a
``value``/``index`` of its own):

* Streamlit still holds the widget (this page drew it last run): a value the user (or the page, before
  this call) changed is written to ``name``;
* it forgot it (another page was open, or it is new, e.g. a new encoder): it gets ``name``'s value back,
  or ``default`` when the session has none or it is not among ``options``, and nothing is written (so a
  page whose options lack a value another page chose does not overwrite that choice).

Either way the value is assigned through the Session State API, so that the browser is sent it: after a
run that ended early (``st.stop()``, e.g. before a large embedding) Streamlit keeps a widget's state while
the browser has dropped the widget, which would otherwise come back showing its first option.

Names shared by pages (``WORD``, ``SOURCE``, ``ENCODER``, ``LAYER`` ...) are one value for all of them:
the word typed in the Sense explorer is the word of Compare models, the layer chosen under ELMo
(LSTM-1, position 1) is the layer under CoVe (CoVe-1) and back. A name may be any hashable, e.g.
``(QUERY, corpus, word, n)`` for the occurrence chosen per word.

The URL mirrors the state, so that a copied link opens the same view: each page ends its run with
``mirror({parameter: text})`` (the page's corpus, word, encoder, layer, occurrence ...; what is empty or
at its default left out), which replaces the URL's query; a new session (a link opened, a reload) reads
the URL once, and each page takes a parameter back with ``from_url(parameter)`` (once) before it binds
the widgets that show it."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import streamlit as st

STORE, SHOWN, URL, URL_TAKEN = "_session", "_session_shown", "_session_url", "_session_url_taken"
MISSING = object()

# names shared by every page that shows the value
WORD, WORD_CORPUS = "word", "word_corpus"  # the word, and the corpus it was chosen in
SOURCE, JSONL_FILE, JSONL_PATH, TEXT, UPLOADED = "source", "jsonl_file", "jsonl_path", "text", "uploaded"
ENCODER, LAYER, QUERY = "encoder", "layer", "query"
ATTENTION_SENTENCE = "attention_sentence"


def model_name(kind: str) -> str:
    """The session's model directory of encoder ``kind``, shared by the pages that have one encoder."""
    return f"model_{kind}"


def _store() -> dict:
    return st.session_state.setdefault(STORE, {})


def get(name: Hashable, default: Any = None) -> Any:
    return _store().get(name, default)


def put(name: Hashable, value: Any, key: str | None = None) -> None:
    """Set ``name`` (and widget ``key``, which must not be drawn yet in this run) to ``value``."""
    _store()[name] = value
    if key is not None:
        st.session_state[key] = value
        st.session_state.setdefault(SHOWN, {})[key] = value


def bind(key: str, name: Hashable | None = None, default: Any = None, options: Sequence | None = None) -> str:
    """Before drawing widget ``key``: sync it with the session's ``name`` (default: ``key``) as the module
    docstring says; returns ``key``."""
    name = key if name is None else name
    store, shown = _store(), st.session_state.setdefault(SHOWN, {})
    if key in st.session_state:
        value = st.session_state[key]
        if shown.get(key, MISSING) != value:
            store[name] = value
        st.session_state[key] = value  # sent to the browser again: see below
    else:
        value = store.get(name, MISSING)
        if value is MISSING or (options is not None and value not in options):
            value = default
        st.session_state[key] = value
    shown[key] = value
    return key


def from_url(parameter: str) -> str | None:
    """The value ``parameter`` had in the URL this session was opened with, the first time it is asked
    for (then None: a later change in the page is not undone by the link)."""
    if URL not in st.session_state:
        st.session_state[URL] = {name: st.query_params.get(name) for name in st.query_params}
    taken = st.session_state.setdefault(URL_TAKEN, set())
    if parameter in taken:
        return None
    taken.add(parameter)
    return st.session_state[URL].get(parameter)


def mirror(parameters: dict[str, object]) -> None:
    """Make the URL's query exactly ``parameters`` (None and "" left out), so that the address bar can be
    copied as a link to this view."""
    from_url("")  # the URL this session was opened with is read before the first change to it
    wanted = {name: str(value) for name, value in parameters.items() if value is not None and str(value) != ""}
    if dict(st.query_params) != wanted:
        st.query_params.from_dict(wanted)
