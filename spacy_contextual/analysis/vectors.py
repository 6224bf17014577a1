"""The contextual vectors of a word's occurrences: every layer, then one layer or the mix.

``embed`` is any encoder callable ``list of token lists -> list of arrays (n_layers, n_tokens, dim)``
(the ``embed_sentences`` of any ``embedders.Embedder``, ELMo or CoVe). The mix is the untrained
scalar mix, s = 0 and γ = 1: ELMo = Σ_j (1/L) · h_j, the mean of the layers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

Embed = Callable[[list[list[str]]], Sequence[np.ndarray]]
Layer = int | str
MIX = "mix"


def occurrence_layers(embed: Embed, records: list[dict], occurrences: pd.DataFrame) -> np.ndarray:
    """(n_occurrences, n_layers, dim) float32; each sentence that holds an occurrence is embedded once."""
    sentence_ids = sorted(set(occurrences["record"]))
    arrays = embed([list(records[i]["tokens"]) for i in sentence_ids])
    by_record = dict(zip(sentence_ids, arrays, strict=True))
    return np.stack(
        [by_record[r][:, p] for r, p in zip(occurrences["record"], occurrences["position"], strict=True)]
    ).astype(np.float32)


def layer_options(n_layers: int) -> list[Layer]:
    return [*range(n_layers), MIX]


def select_layer(layers: np.ndarray, layer: Layer) -> np.ndarray:
    """One layer (n, dim) of ``occurrence_layers``' output, or the mix."""
    if layer == MIX:
        return layers.mean(axis=1)
    if not 0 <= int(layer) < layers.shape[1]:
        raise ValueError(f"layer {layer} does not exist: the encoder has layers 0..{layers.shape[1] - 1} and '{MIX}'")
    return layers[:, int(layer)]
