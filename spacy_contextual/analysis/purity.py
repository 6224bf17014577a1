"""How well one layer separates a word's senses, as one number per layer (the ELMo paper's finding
that the top biLM layer knows word sense, as a picture).

* ``knn_sense_accuracy``: leave-one-out k-nearest-neighbour vote (cosine): the share of occurrences
  whose k nearest other occurrences mostly have its gold sense (ties go to the nearer neighbours);
  ``knn_sense_votes`` says it per occurrence (a slice's purity is the share among its members).
* ``word_form_accuracy``: the best a type-level layer (one vector per word form) can do: each
  occurrence gets the most frequent sense of its word form (an upper bound); ``word_form_votes`` per
  occurrence. A k-NN vote on a type-level layer would be decided by how ties among identical vectors are
  broken, so a type-level layer is scored this way instead.
* ``majority_share``: the share of the most frequent sense, what always guessing it scores: the
  baseline beside every score above.
* ``silhouette``: mean silhouette (cosine) of a labelling, on a fixed sample of at most 2,000 points.

Silhouette bands (Kaufman & Rousseeuw): below 0.25 no substantial structure, 0.25-0.5 weak,
0.5-0.7 reasonable, above 0.7 strong.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from .clusters import SILHOUETTE_SAMPLE
from .projection import cosine_knn

STRUCTURE_BANDS = ((0.7, "strong"), (0.5, "reasonable"), (0.25, "weak"), (-1.0, "no substantial"))


def knn_sense_votes(vectors: np.ndarray, senses: Sequence[str], k: int = 5) -> np.ndarray:
    """(n,) bool: whether each occurrence's k nearest other occurrences (cosine) mostly have its sense."""
    labels = np.asarray(senses)
    k = min(k, len(labels) - 1)
    neighbours, _ = cosine_knn(vectors, k + 1)
    correct = np.zeros(len(labels), dtype=bool)
    for row, hits in enumerate(neighbours):
        votes = Counter()
        for rank, other in enumerate(hits[hits != row][:k]):
            votes[labels[other]] += 1 + 1e-3 * (k - rank)  # ties: the nearer neighbours win
        correct[row] = votes.most_common(1)[0][0] == labels[row]
    return correct


def knn_sense_accuracy(vectors: np.ndarray, senses: Sequence[str], k: int = 5) -> float:
    return float(knn_sense_votes(vectors, senses, k).mean())


def word_form_votes(forms: Sequence[str], senses: Sequence[str]) -> np.ndarray:
    """(n,) bool: whether each occurrence's sense is the most frequent sense of its word form."""
    by_form: dict[str, Counter] = {}
    for form, sense in zip(forms, senses, strict=True):
        by_form.setdefault(form, Counter())[sense] += 1
    majority = {form: counts.most_common(1)[0][0] for form, counts in by_form.items()}
    return np.array([majority[form] == sense for form, sense in zip(forms, senses, strict=True)], dtype=bool)


def word_form_accuracy(forms: Sequence[str], senses: Sequence[str]) -> float:
    """The share of occurrences whose sense is the most frequent sense of their word form: what a
    type-level layer could reach at best (an upper bound, measured on the occurrences themselves)."""
    return float(word_form_votes(forms, senses).mean())


def majority_share(senses: Sequence[str]) -> float:
    return Counter(senses).most_common(1)[0][1] / len(senses)


def silhouette(vectors: np.ndarray, labels: Sequence, seed: int = 0) -> float | None:
    """None when there are fewer than two labels or every point has its own."""
    from sklearn.metrics import silhouette_score

    labels = np.asarray(labels)
    distinct = len(set(labels.tolist()))
    if distinct < 2 or distinct >= len(labels):
        return None
    sample = min(SILHOUETTE_SAMPLE, len(labels))
    return float(silhouette_score(vectors, labels, metric="cosine", sample_size=sample, random_state=seed))


def structure_strength(score: float) -> str:
    """ "strong", "reasonable", "weak" or "no substantial" (cluster structure) for a silhouette."""
    return next(name for bound, name in STRUCTURE_BANDS if score > bound)
