"""The contextual vectors of a word's occurrences: every layer, then one layer or a mix of them.

``embed`` is any encoder callable ``list of token lists -> list of arrays (n_layers, n_tokens, dim)``
(the ``embed_sentences`` of any ``embedders.Embedder``, ELMo or CoVe); ``occurrence_store`` turns it
into (n_occurrences, n_layers, dim) arrays. A mix is Σ_j w_j · h_j with
weights w that sum to 1 (γ only scales, which cosine similarity ignores): the untrained scalar mix
(s = 0: w_j = 1/L, the mean of the layers) unless other weights are given, e.g. the softmax(s) a
tagger learned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Embed = Callable[[list[list[str]]], Sequence[np.ndarray]]
Layer = int | str
MIX = "mix"


def layer_options(n_layers: int) -> list[Layer]:
    return [*range(n_layers), MIX]


def mix_weights(n_layers: int, weights: Sequence[float] | None = None) -> np.ndarray:
    """The weights of a mix, normalised to sum to 1; None = uniform (1/L)."""
    if weights is None:
        return np.full(n_layers, 1.0 / n_layers, dtype=np.float32)
    w = np.asarray(weights, dtype=np.float32)
    if w.shape != (n_layers,) or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"a mix needs {n_layers} non-negative weights, not all zero; got {list(weights)}")
    return w / w.sum()


def select_layer(layers: np.ndarray, layer: Layer, weights: Sequence[float] | None = None) -> np.ndarray:
    """One layer (n, dim) of an (n, n_layers, dim) array, or the mix with ``weights``."""
    if layer == MIX:
        return np.tensordot(layers, mix_weights(layers.shape[1], weights), axes=([1], [0])).astype(np.float32)
    if not 0 <= int(layer) < layers.shape[1]:
        raise ValueError(f"layer {layer} does not exist: the encoder has layers 0..{layers.shape[1] - 1} and '{MIX}'")
    return layers[:, int(layer)]
