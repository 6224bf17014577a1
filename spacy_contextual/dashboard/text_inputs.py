"""Text inputs with a length cap (messages quote at most 80 characters of what was typed:
``errors.quoted``), and the keys of widgets whose options come from a context (word, corpus, encoder,
model): a new context is a new widget (its value kept across pages by ``session``)."""

from __future__ import annotations

import hashlib

import streamlit as st

MAX_PATH_CHARS = 1024  # a typed path; longer ones cannot be a real directory on common file systems
MAX_WORD_CHARS = 200  # a word to look up, or a few comma-separated forms of it


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
