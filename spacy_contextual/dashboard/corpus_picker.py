"""The corpus widgets shared by the sense explorer, the layer probe and the model comparison: bundled
demo sentences, pasted text, an uploaded text or JSONL file, or a sense-labelled JSONL file on disk (the
files found listed by name, their folder below); and the word picker. Both are mirrored in the URL:
``corpus`` is "demo", a file of the sense-data folder by name, a path, or "paste" / "upload" (whose text
a link cannot carry), and ``word`` the word."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import streamlit as st

from .. import environment
from ..analysis.lemmas import lemmatizer_note
from ..analysis.markdown import escape_markdown
from ..analysis.occurrences import (
    InputError,
    corpus_words,
    demo_corpus,
    read_sense_jsonl,
    suggest_words,
    text_corpus,
    text_corpus_from_bytes,
)
from . import session
from .page_setup import setting
from .text_inputs import MAX_PATH_CHARS, MAX_WORD_CHARS, path_input, word_input

DEMO, PASTE, UPLOAD, JSONL = "Demo sentences", "Paste text", "Upload a file", "Sense-labelled JSONL"
MAX_UPLOAD_BYTES = 50_000_000
CORPUS_KEY = "corpus_parameter"  # the URL's corpus of the page's current choice
OTHER_PATH = "other path…"
URL_SOURCES = {DEMO: "demo", PASTE: "paste", UPLOAD: "upload"}  # the URL's corpus for the sources without a file


@st.cache_data(max_entries=16, show_spinner="Reading the corpus…")
def load_corpus(source: str, payload: str | bytes | None, filename: str = "") -> tuple[list[dict], str]:
    """(records, digest) for one corpus choice; the digest keys the cached vectors."""
    if source == DEMO:
        records = demo_corpus()
    elif source == PASTE:
        records = text_corpus(payload or "")
    elif source == UPLOAD:
        if len(payload) > MAX_UPLOAD_BYTES:
            raise InputError(f"The file has {len(payload):,} bytes; the limit is {MAX_UPLOAD_BYTES:,}.")
        if filename.endswith((".jsonl", ".jsonl.gz", ".gz")):
            records = read_sense_jsonl(payload)
        else:
            records = text_corpus_from_bytes(payload)
    elif source == JSONL:
        records = read_sense_jsonl(payload or "")
    else:
        raise InputError(f"unknown corpus source '{source}'")
    digest = hashlib.sha1(json.dumps(records, sort_keys=True).encode()).hexdigest()[:16]
    return records, digest


def corpus_from_url(sources: tuple[str, ...]) -> None:
    """The URL's ``corpus`` into the session (once): a source, a file of the sense-data folder, or a path."""
    value = session.from_url("corpus")
    if not value:
        return
    by_name = {name: source for source, name in URL_SOURCES.items()}
    if value in by_name and by_name[value] in sources:
        session.put(session.SOURCE, by_name[value])
        return
    if JSONL not in sources:
        return
    folder = sense_data_dir()
    known = {p.name: str(p) for p in folder.glob("*.jsonl*")} if folder else {}
    session.put(session.SOURCE, JSONL)
    if value in known:
        session.put(session.JSONL_FILE, known[value])
    else:
        session.put(session.JSONL_FILE, OTHER_PATH)
        session.put(session.JSONL_PATH, value[:MAX_PATH_CHARS])


def corpus_parameter(source: str, payload) -> str:
    """The URL's ``corpus`` for this choice (``corpus_from_url`` reads it back)."""
    if source != JSONL:
        return URL_SOURCES[source]
    folder = sense_data_dir()
    path = str(payload)
    return Path(path).name if folder and Path(path).parent == folder and Path(path).is_file() else path


def corpus_picker(key: str, sources: tuple[str, ...] = (DEMO, PASTE, UPLOAD, JSONL)) -> tuple[list[dict], str, str]:
    """Widgets in the sidebar, showing the session's corpus (``session``: one corpus for every page, also from
    the URL; an uploaded file is kept too); returns (records, digest, source) and sets ``CORPUS_KEY`` of the
    session state to the URL's ``corpus`` for it. A bad corpus stops the page with a message."""
    corpus_from_url(sources)
    with st.sidebar:
        source = st.radio("Corpus", sources, key=session.bind(f"{key}_source", session.SOURCE, sources[0], sources))
        payload, filename = None, ""
        if source == PASTE:
            payload = st.text_area(
                "Text", key=session.bind(f"{key}_text", session.TEXT, ""), height=160,
                placeholder="Paste English text (up to 200,000 characters).",
            )  # fmt: skip
            if not (payload or "").strip():
                st.info("Paste some English text above: the page then suggests words that occur in it often.")
                st.stop()
        elif source == UPLOAD:
            uploaded = st.file_uploader(
                "Text, .jsonl or .jsonl.gz file", type=["txt", "jsonl", "gz"], key=f"{key}_upload"
            )
            if uploaded is not None:  # kept for the other pages (a file uploader cannot be given a file back)
                session.put(session.UPLOADED, (uploaded.name, uploaded.getvalue()))
            kept = session.get(session.UPLOADED)
            if kept is None:
                st.info("Upload a file to use it as the corpus.")
                st.stop()
            filename, payload = kept
            if uploaded is None:
                st.caption(f"Using {escape_markdown(filename)}, uploaded earlier; upload another file to replace it.")
        elif source == JSONL:
            folder = sense_data_dir()
            files = [*sorted(str(p) for p in folder.glob("*.jsonl*")), OTHER_PATH] if folder else [OTHER_PATH]
            choice = st.selectbox(
                "File", files, format_func=lambda path: Path(path).name if path != OTHER_PATH else path,
                key=session.bind(f"{key}_jsonl_file", session.JSONL_FILE, files[0], files),
            )  # fmt: skip
            if folder:
                st.caption(f"in {escape_markdown(folder)}")
            payload = (
                path_input("Path", key=session.bind(f"{key}_jsonl_path", session.JSONL_PATH, ""))
                if choice == OTHER_PATH
                else choice
            )
            if not payload:
                st.info("Give the path of a sense-labelled .jsonl or .jsonl.gz file.")
                st.stop()
    st.session_state[CORPUS_KEY] = corpus_parameter(source, payload)
    try:
        records, digest = load_corpus(source, payload, filename)
    except InputError as error:
        st.error(str(error))
        st.stop()
    return records, digest, source


def word_picker(key: str, records: list[dict], digest: str, source: str) -> str:
    """Sidebar: the session's word (or forms), with the corpus's labelled or frequent words as one-click
    suggestions; a new corpus starts at its own first word (the demo: "play"), unless the page that
    opened this one named the word."""
    words = corpus_words(records)
    suggestions = words if words else suggest_words(records)
    word_key = f"{key}_word"
    keep = st.session_state.pop(f"{key}_keep_word", False)
    linked = session.from_url("word")
    if linked:
        session.put(session.WORD, linked[:MAX_WORD_CHARS])
        keep = True
    if session.get(session.WORD_CORPUS) != digest:  # a new corpus starts at its own word
        session.put(session.WORD_CORPUS, digest)
        if not keep:
            session.put(session.WORD, "play" if source == DEMO else (suggestions[0] if suggestions else ""), word_key)

    def take_suggestion():
        choice = st.session_state[f"{key}_suggestion"]
        if choice:
            session.put(session.WORD, choice, word_key)
        st.session_state[f"{key}_suggestion"] = None

    with st.sidebar:
        word = word_input(
            "Word (or several forms, comma-separated)", key=session.bind(word_key, session.WORD, ""),
            help="e.g. serve, served, serves",
        )  # fmt: skip
        if suggestions:
            st.pills(
                "Labelled words" if words else "Frequent words here",
                suggestions[:12],
                format_func=escape_markdown,  # an option label is markdown: a word from the data is shown as typed
                key=f"{key}_suggestion",
                on_change=take_suggestion,
            )
        note = lemmatizer_note()
        st.caption(note or "Lemma-aware: a word also finds its other forms (run → runs, ran).")
    return word.strip().lower()


def sense_data_dir() -> Path | None:
    """Where sense-labelled JSONL files are looked for: the environment variable, else ../shared/data/senses
    next to a source checkout, else none."""
    folder = setting(environment.SENSE_DATA)
    if folder is not None:
        return folder
    checkout = Path(__file__).resolve().parents[3] / "shared" / "data" / "senses"
    return checkout if checkout.is_dir() else None
