"""The time estimates the dashboard gives before a long computation, checked against the real time on this
machine at two sizes each: within 2x, as the page promises (a loaded machine slows the estimate's runs and
the measured ones alike, since they run back to back)."""

import time

import numpy as np
import pytest
from util import DATA, tiny_bilm

from spacy_contextual.analysis.estimates import LinearCost, umap_cost
from spacy_contextual.analysis.occurrence_store import OccurrenceStore
from spacy_contextual.analysis.occurrences import read_sense_jsonl
from spacy_contextual.analysis.projection import project
from spacy_contextual.embedders.elmo import ElmoEmbedder


def test_a_linear_cost_has_a_fixed_part_and_a_part_per_item():
    cost = LinearCost.fit([250, 1000], [2.25, 3.0])
    assert cost.fixed == pytest.approx(2.0) and cost.per_item == pytest.approx(0.001)
    assert cost.seconds(4333) == pytest.approx(6.333)
    assert LinearCost.fit([100, 200], [2.0, 1.9]) == LinearCost(1.95, 0.0)  # noise larger than the growth
    assert LinearCost.fit([100, 200], [0.5, 2.0]).fixed == 0.0  # none of it fixed
    with pytest.raises(ValueError, match="two different sizes"):
        LinearCost.fit([100, 100], [1.0, 1.1])


def blobs(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = 3 * rng.normal(size=(8, 64))
    return (centres[rng.integers(0, 8, n)] + rng.normal(size=(n, 64))).astype(np.float32)


@pytest.mark.timeout(300)
def test_the_umap_estimate_is_within_2x_at_two_sizes():
    vectors = blobs(2400)
    project(vectors[:100], "umap")  # compiled before anything is timed, as the page does
    cost = umap_cost(vectors)  # runs at 250 and 1,000 points
    for size in (600, 2400):
        started = time.perf_counter()
        project(vectors[:size], "umap")
        seconds = time.perf_counter() - started
        assert 0.5 <= seconds / cost.seconds(size) <= 2.0, (size, seconds, cost)


@pytest.mark.timeout(300)
def test_the_embedding_estimate_is_within_2x_at_two_sizes():
    """As the page does on a server's first corpus: a fresh encoder, the cost measured on a sample drawn
    across the sentences, then the rest embedded (the small model, whose char-CNN cache makes the second
    thousand sentences several times faster than the first hundred)."""
    records = read_sense_jsonl(DATA / "senses" / "hard.jsonl.gz")
    everything = [(r, record["target"]) for r, record in enumerate(records)]
    for size in (600, 2400):
        pairs = everything[1000 : 1000 + size]
        store = OccurrenceStore(ElmoEmbedder(tiny_bilm()).embed_sentences, records)
        store.calibrate(pairs)
        estimate = store.estimate_seconds(pairs)
        started = time.perf_counter()
        store.layers(pairs)
        seconds = time.perf_counter() - started
        assert 0.5 <= seconds / estimate <= 2.0, (size, seconds, estimate, store.cost)
