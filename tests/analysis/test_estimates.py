"""The time estimates the dashboard gives before a long computation, checked against the real time on this
machine at two sizes each: within 2x, as the page promises. The two timed tests run real work for tens of
seconds (UMAP; the bundled ELMo, the model the dashboard starts with), so they are in the integration tier
with the other long runs; the estimate's runs and the measured ones run back to back, so that a machine
shared with other work slows both alike."""

import time

import numpy as np
import pytest
from util import DATA

from spacy_contextual.analysis.estimates import LinearCost, umap_cost
from spacy_contextual.analysis.occurrence_store import OccurrenceStore
from spacy_contextual.analysis.occurrences import read_sense_jsonl
from spacy_contextual.analysis.projection import project


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


@pytest.mark.integration
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


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_the_embedding_estimate_is_within_2x_at_two_sizes():
    """As the page does before a large embedding: the bundled ELMo with nothing cached, the cost measured on
    chunks drawn across the sentences, then the rest embedded and timed."""
    from spacy_contextual.analysis.model_loading import load_model

    records = read_sense_jsonl(DATA / "senses" / "hard.jsonl.gz")
    everything = [(r, record["target"]) for r, record in enumerate(records)]
    embedder = load_model("elmo", "default")
    for size in (1200, 3300):
        embedder.token_cache.clear()
        pairs = everything[1000 : 1000 + size]
        store = OccurrenceStore(embedder.embed_sentences, records)
        store.calibrate(pairs)
        estimate = store.estimate_seconds(pairs)
        started = time.perf_counter()
        store.layers(pairs)
        seconds = time.perf_counter() - started
        assert 0.5 <= seconds / estimate <= 2.0, (size, seconds, estimate, store.cost)


def test_the_estimate_is_the_cost_of_a_chunk_of_the_embedding_size():
    """An encoder whose cost per token falls with the batch (as real ones do) is timed on chunks as large as
    the embedding's, not on the small first one: the estimate is then right at any size."""
    clock = [0.0]

    def embed(sentences):  # 0.25 s a call, then 1 ms a token: smaller batches cost more a token
        clock[0] += 0.25 + 0.001 * sum(map(len, sentences))
        return [np.zeros((1, len(tokens), 2), dtype=np.float32) for tokens in sentences]

    records = [{"tokens": ["w"] * 20} for _ in range(5000)]
    for size in (1500, 5000):
        store = OccurrenceStore(embed, records)
        store.timing.clock = lambda: clock[0]
        pairs = [(r, 0) for r in range(size)]
        store.calibrate(pairs)
        estimate, started = store.estimate_seconds(pairs), clock[0]
        store.layers(pairs)
        assert 0.9 <= (clock[0] - started) / estimate <= 1.1
