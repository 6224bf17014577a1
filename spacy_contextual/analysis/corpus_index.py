"""Sentence-level neighbours (the ELMo paper's Table 4): the nearest tokens of *any* word in the corpus
to one occurrence, by cosine similarity at a layer or mix.

``build_token_index`` embeds the corpus's sentences in order until ``max_tokens`` tokens (every layer
of every token, float16 to halve the memory; ``indexed_records`` says which sentences those are; of a
first sentence longer than that, its first ``max_tokens`` tokens), in chunks (``record_chunks``) with
``progress(done, total)`` after each; ``nearest_tokens`` ranks them against a query vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .neighbours import kwic
from .occurrence_store import Progress, record_chunks
from .occurrence_vectors import Embed, Layer, select_layer
from .projection import normalize_rows

MAX_INDEX_TOKENS = 30_000


@dataclass
class TokenIndex:
    layers: np.ndarray  # (tokens, n_layers, dim) float16
    record: np.ndarray  # (tokens,) record of each token
    position: np.ndarray  # (tokens,) position in its record
    sentences: int  # sentences indexed
    total_sentences: int  # sentences in the corpus


def indexed_records(records: list[dict], max_tokens: int = MAX_INDEX_TOKENS) -> list[int]:
    """The first sentences of the corpus that fit in ``max_tokens`` tokens (at least one)."""
    chosen, tokens = [], 0
    for index, record in enumerate(records):
        if chosen and tokens + len(record["tokens"]) > max_tokens:
            break
        chosen.append(index)
        tokens += len(record["tokens"])
    return chosen


def build_token_index(
    embed: Embed, records: list[dict], max_tokens: int = MAX_INDEX_TOKENS, progress: Progress | None = None
) -> TokenIndex:
    chosen = indexed_records(records, max_tokens)
    layers, record, position, indexed, done = [], [], [], 0, 0
    for chunk in record_chunks(records, chosen):
        for index, array in zip(chunk, embed([list(records[i]["tokens"]) for i in chunk]), strict=True):
            kept = min(array.shape[1], max_tokens - indexed)
            indexed += kept
            layers.append(np.moveaxis(array[:, :kept], 0, 1).astype(np.float16))  # (tokens, L, d)
            record.append(np.full(kept, index))
            position.append(np.arange(kept))
        done += len(chunk)
        if progress is not None:
            progress(done, len(chosen))
    layers, record, position = np.concatenate(layers), np.concatenate(record), np.concatenate(position)
    return TokenIndex(layers, record, position, len(chosen), len(records))


def nearest_tokens(
    index: TokenIndex,
    records: list[dict],
    query: np.ndarray,
    layer: Layer,
    weights: Sequence[float] | None = None,
    k: int = 10,
    exclude: tuple[int, int] | None = None,
    other_words_only: str | None = None,
) -> pd.DataFrame:
    """The ``k`` tokens most similar to ``query`` (dim,): record, position, token, similarity and the
    KWIC line. ``exclude`` (record, position) leaves the query itself out; ``other_words_only`` leaves
    out every token that is this word (case-insensitive)."""
    vectors = normalize_rows(select_layer(index.layers.astype(np.float32), layer, weights))
    similarity = vectors @ normalize_rows(np.asarray(query, dtype=np.float32)[None])[0]
    keep = np.ones(len(similarity), dtype=bool)
    if exclude is not None:
        keep &= ~((index.record == exclude[0]) & (index.position == exclude[1]))
    tokens = [records[r]["tokens"][p] for r, p in zip(index.record, index.position, strict=True)]
    if other_words_only:
        keep &= np.array([t.lower() != other_words_only.lower() for t in tokens])
    similarity = np.where(keep, similarity, -np.inf)
    nearest = np.argsort(-similarity, kind="stable")[: min(k, int(keep.sum()))]
    lines = [kwic(records[index.record[i]]["tokens"], int(index.position[i])) for i in nearest]
    return pd.DataFrame(
        {
            "record": index.record[nearest],
            "position": index.position[nearest],
            "token": [tokens[i] for i in nearest],
            "similarity": similarity[nearest].astype(float),
            "left": [line[0] for line in lines],
            "word": [line[1] for line in lines],
            "right": [line[2] for line in lines],
        }
    )
