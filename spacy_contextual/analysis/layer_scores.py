"""How well every layer (and a mix) of one word's occurrences separates its senses, each score beside
what needs no layer at all, and the PCA of each for the small multiples.

* With gold senses: contextual layers score ``PURITY_K``-NN sense purity (``purity.knn_sense_accuracy``:
  a leave-one-out vote of each occurrence's k nearest other occurrences); the type-level layer scores
  the best a word form alone can do (``purity.word_form_accuracy``); beside each, the majority-sense
  share (``purity.majority_share``), what always guessing the commonest sense scores.
* Without: the silhouette of the clusters, with no baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .occurrence_vectors import Layer, layer_options, select_layer
from .projection import Projection, project
from .purity import knn_sense_accuracy, majority_share, silhouette, word_form_accuracy
from .sense_probe import TYPE_LEVEL_LAYER

PURITY_K = 5
PURITY_VS_PROBE = (
    f"The explorer's {PURITY_K}-NN purity lets each occurrence's {PURITY_K} nearest other occurrences vote, among "
    "all of this word's occurrences; the Layer probe's accuracy labels held-out instances by the nearest sense "
    "centroid of the other folds, on a sample: different questions, so the numbers differ."
)


@dataclass
class LayerScore:
    layer: Layer
    score_name: str | None  # "5-NN purity", "word form alone", "silhouette of the clusters"
    score: float | None
    majority: float | None  # the majority-sense share; None without gold senses
    projection: Projection | None  # PCA of the layer; None for the type-level layer (one point per form)

    def caption(self) -> str:
        """ "5-NN purity 0.91 · majority sense 0.80", or "no score"."""
        if self.score is None:
            return "no score"
        text = f"{self.score_name} {self.score:.2f}"
        return text + (f" · majority sense {self.majority:.2f}" if self.majority is not None else "")


def has_gold_senses(senses: Sequence) -> bool:
    return all(s is not None for s in senses) and len(set(senses)) > 1


def layer_scores(
    layers: np.ndarray, weights, senses: Sequence, forms: Sequence[str], clusters: np.ndarray
) -> list[LayerScore]:
    """One ``LayerScore`` per layer of ``layers`` (n, n_layers, dim) and the mix with ``weights``."""
    gold = has_gold_senses(senses)
    majority = majority_share(senses) if gold else None
    scores = []
    for layer in layer_options(layers.shape[1]):
        vectors = select_layer(layers, layer, weights)
        if layer == TYPE_LEVEL_LAYER:
            name, value = "word form alone", word_form_accuracy(forms, senses) if gold else None
        elif gold:
            name, value = f"{PURITY_K}-NN purity", knn_sense_accuracy(vectors, senses, PURITY_K)
        else:
            name, value = "silhouette of the clusters", silhouette(vectors, clusters)
        projection = None if layer == TYPE_LEVEL_LAYER else project(vectors, "pca")
        scores.append(LayerScore(layer, name, value, majority, projection))
    return scores
