"""Lemma-aware word search: "run" finds "runs" and "ran" when spaCy's English lookup lemmatizer can be
built (it needs the ``spacy-lookups-data`` package); otherwise only the exact forms match, and
``lemmatizer_note`` says so."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

LOOKUPS_PACKAGE = "spacy-lookups-data"


@lru_cache(maxsize=1)
def english_lemmatizer():
    """A blank English pipeline with the lookup lemmatizer, or None when its tables are not installed."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("lemmatizer", config={"mode": "lookup"})
    try:
        nlp.initialize()
    except (ValueError, ImportError, OSError):  # spaCy raises ValueError (E955) when the tables are missing
        return None
    return nlp


def lemmatizer_note() -> str | None:
    """None when lemmas are available, else what the user gets instead and how to get lemmas."""
    if english_lemmatizer() is not None:
        return None
    return (
        f"No English lemmatizer here (the {LOOKUPS_PACKAGE} package is not installed): only the exact word forms "
        f"match. Type several forms separated by commas (e.g. run, runs, ran), or `pip install {LOOKUPS_PACKAGE}`."
    )


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    nlp = english_lemmatizer()
    if nlp is None:
        return word.lower()
    lookup = nlp.get_pipe("lemmatizer").lookups.get_table("lemma_lookup")
    lowered = word.lower()
    return str(lookup.get(lowered, lookup.get(word, lowered))).lower()


def matching_forms(query: Iterable[str], vocabulary: Iterable[str]) -> set[str]:
    """The lowercased forms of ``vocabulary`` that ``query`` (one or more forms) stands for: the forms
    themselves, and every form with the same lemma when the lemmatizer is available."""
    forms = {q.strip().lower() for q in query if q.strip()}
    if english_lemmatizer() is None:
        return forms
    lemmas = {lemma(q) for q in forms}
    return forms | {w.lower() for w in vocabulary if lemma(w) in lemmas}
