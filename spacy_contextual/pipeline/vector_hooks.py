"""Contextual ``token.vector`` / ``span.vector`` / ``doc.vector`` and ``similarity`` (spaCy user hooks).

A token's vector is its row of the contextual vectors (one layer, or the mean of all layers); a
span's or doc's vector is the mean over its non-whitespace tokens; similarity is the cosine
u·v / (|u| |v|), 0 when either vector is zero. Unlike spaCy's default, two tokens of the same word
are not similar by definition: their contexts decide.

The hooks read their source every time, so after a retokenization (``merge_entities``, ...) they use
the re-aligned ``doc._.elmo_data`` (``doc_data.py``) and agree with it and with the listeners.

Hooks are functions on the Doc object and are not serialized: after ``DocBin``, ``doc.from_bytes``
or ``nlp.pipe(n_process>1)`` the data (``doc._.elmo_data``) is still there and
``set_vector_hooks(doc)`` puts the hooks back.
"""

from __future__ import annotations

from collections.abc import Callable

from spacy.tokens import Doc, Span, Token
from thinc.api import get_array_module
from thinc.types import Floats1d, Floats2d

from ..errors import ContextualError
from .doc_data import stored_data

VectorSource = Callable[[Doc, int, int], Floats2d]  # (doc, start, end) -> the rows of tokens start..end-1


def layer_source(extension: str = "elmo_data", layer: int | None = None) -> VectorSource:
    """Vectors from ``doc._.<extension>``: one layer, or None for the mean of all stored layers."""
    last: dict = {}  # the data the rows were last computed from (kept alive, so its identity is not reused)

    def vectors(doc: Doc, start: int, end: int) -> Floats2d:
        data = stored_data(doc, extension)
        if data is None:
            raise ValueError(f'doc._.{extension} is not set: run the pipeline (or set store = "all"/"mixed")')
        if not data.rows_belong_to(doc, start, end):
            data = doc._.get(extension)  # re-aligned with the Doc's current tokens (and stored so)
        if last.get("data") is not data:
            last["data"], last["rows"] = data, data.token_vectors(layer if data.n_layers > 1 else None)
        return last["rows"][start:end]

    return vectors


def tensor_source(doc: Doc, start: int, end: int) -> Floats2d:
    if doc.tensor.shape[0] != len(doc):
        raise ContextualError(
            f"doc.tensor has {doc.tensor.shape[0]} rows for {len(doc)} tokens (spaCy does not keep it aligned when "
            'a token is split): set the component\'s store = "all" or "mixed" for vectors that follow retokenization'
        )
    return doc.tensor[start:end]


def set_vector_hooks(doc: Doc, source: VectorSource | None = None) -> None:
    """Install the hooks on ``doc``; ``source`` defaults to the mean of ``doc._.elmo_data``'s layers."""
    source = source or layer_source()

    def token_vector(token: Token) -> Floats1d:
        return source(token.doc, token.i, token.i + 1)[0]

    def span_vector(span: Span | Doc) -> Floats1d:
        doc_ = span.doc if isinstance(span, Span) else span
        start, end = (span.start, span.end) if isinstance(span, Span) else (0, len(doc_))
        rows = source(doc_, start, end)
        xp = get_array_module(rows)
        keep = xp.asarray([not token.is_space for token in doc_[start:end]], dtype=bool)
        if not keep.any():
            return xp.zeros((rows.shape[1],), dtype="float32")
        return rows[keep].mean(axis=0)

    doc.user_token_hooks["vector"] = token_vector
    doc.user_token_hooks["has_vector"] = lambda token: bool(_norm(token_vector(token)) > 0)
    doc.user_token_hooks["similarity"] = _similarity
    doc.user_span_hooks["vector"] = span_vector
    doc.user_span_hooks["has_vector"] = lambda span: bool(_norm(span_vector(span)) > 0)
    doc.user_span_hooks["similarity"] = _similarity
    doc.user_hooks["vector"] = span_vector
    doc.user_hooks["has_vector"] = lambda doc_: bool(_norm(span_vector(doc_)) > 0)
    doc.user_hooks["similarity"] = _similarity


def _norm(vector: Floats1d) -> float:
    xp = get_array_module(vector)
    return float(xp.sqrt((vector * vector).sum()))


def _similarity(this, other) -> float:
    u, v = this.vector, other.vector
    norms = _norm(u) * _norm(v)
    if norms == 0:
        return 0.0
    if u.shape != v.shape:
        raise ValueError(f"cannot compare vectors of width {u.shape[0]} and {v.shape[0]} (different models?)")
    return float((u * v).sum() / norms)
