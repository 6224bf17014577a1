"""Sentence-level neighbours (the ELMo paper's Table 4): the nearest tokens of *any* word in the corpus
to one occurrence, by cosine similarity at a layer or mix.

``build_token_index`` embeds as many of the corpus's sentences as fit in ``max_tokens`` tokens (every
layer of every token, float16 to halve the memory, each chunk as it comes), drawn across the file and
stratified by sense where the records are labelled (``indexed_records``: a prefix of
``sampling.spread_order``, never the file's first sentences; of a first sentence longer than
``max_tokens``, its first ``max_tokens`` tokens), in chunks with ``progress(done_tokens, total_tokens)``
(``occurrence_store.embed_in_chunks``); ``nearest_tokens`` ranks them against a query vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .neighbours import kwic
from .occurrence_store import Progress, Timing, embed_in_chunks
from .occurrence_vectors import Embed, Layer, select_layer
from .projection import normalize_rows
from .sampling import ALL, RANDOM, STRATIFIED, Sample, has_labels, spread_order

MAX_INDEX_TOKENS = 30_000


@dataclass
class TokenIndex:
    layers: np.ndarray  # (tokens, n_layers, dim) float16
    record: np.ndarray  # (tokens,) record of each token
    position: np.ndarray  # (tokens,) position in its record
    sentences: int  # sentences indexed
    total_sentences: int  # sentences in the corpus


def record_senses(records: Sequence[dict]) -> list:
    """Each record's gold sense (None where it has no labelled target)."""
    return [record.get("sense") if record.get("target") is not None else None for record in records]


def indexed_records(records: list[dict], max_tokens: int = MAX_INDEX_TOKENS, seed: int = 0) -> Sample:
    """The sentences that fit in ``max_tokens`` tokens (at least one), taken in ``spread_order`` (across the
    file, stratified by sense where there are labels), in corpus order."""
    senses = record_senses(records)
    chosen, tokens = [], 0
    for index in spread_order(senses, seed):
        length = len(records[index]["tokens"])
        if chosen and tokens + length > max_tokens:
            break
        chosen.append(int(index))
        tokens += length
    how = STRATIFIED if has_labels(senses) else RANDOM
    return Sample(np.array(sorted(chosen), dtype=np.int64), len(records), how if len(chosen) < len(records) else ALL)


def build_token_index(
    embed: Embed, records: list[dict], max_tokens: int = MAX_INDEX_TOKENS, progress: Progress | None = None
) -> TokenIndex:
    chosen = indexed_records(records, max_tokens).indices.tolist()
    layers, record, position, indexed = [], [], [], 0
    sentences = [records[i]["tokens"] for i in chosen]
    for chunk, arrays in embed_in_chunks(embed, sentences, Timing(), progress):
        for index, array in zip(chunk, arrays, strict=True):  # each chunk kept as float16 at once
            kept = min(array.shape[1], max_tokens - indexed)
            indexed += kept
            layers.append(np.moveaxis(array[:, :kept], 0, 1).astype(np.float16))  # (tokens, L, d)
            record.append(np.full(kept, chosen[index]))
            position.append(np.arange(kept))
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
    """The ``k`` tokens most similar to ``query`` (dim,): record, position, token, cosine distance and
    similarity, and the KWIC line (``attrs["farthest"]``: the distance of the farthest token kept).
    ``exclude`` (record, position) leaves the query itself out; ``other_words_only`` leaves
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
    frame = pd.DataFrame(
        {
            "record": index.record[nearest],
            "position": index.position[nearest],
            "token": [tokens[i] for i in nearest],
            "distance": 1.0 - similarity[nearest].astype(float),
            "similarity": similarity[nearest].astype(float),
            "left": [line[0] for line in lines],
            "word": [line[1] for line in lines],
            "right": [line[2] for line in lines],
        }
    )
    kept = similarity[keep]
    frame.attrs["farthest"] = float(1.0 - kept.min()) if len(kept) else 1.0
    return frame
