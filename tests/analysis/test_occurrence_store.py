"""The shared store of occurrence vectors: each sentence embedded once per pair it holds, in chunks
with progress, the same vectors as embedding in one go, and a sense probe that reads from it."""

import numpy as np
import pytest
from util import tiny_bilm

from spacy_contextual.analysis import occurrence_store
from spacy_contextual.analysis.occurrence_store import (
    OccurrenceStore,
    occurrence_layers,
    occurrence_pairs,
    record_chunks,
)
from spacy_contextual.analysis.occurrences import demo_corpus, find_occurrences
from spacy_contextual.analysis.sense_probe import labelled_instances, sample_per_sense, sense_probe
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder


@pytest.fixture(scope="module")
def embedder():
    return ElmoEmbedder(tiny_bilm())


def counting(embed):
    calls = []

    def wrapped(sentences):
        calls.append(len(sentences))
        return embed(sentences)

    return wrapped, calls


def test_only_missing_sentences_are_embedded_and_the_vectors_match(embedder, monkeypatch):
    monkeypatch.setattr(occurrence_store, "CHUNK_SENTENCES", 4)
    records = demo_corpus()
    embed, calls = counting(embedder.embed_sentences)
    store = OccurrenceStore(embed, records)
    play = occurrence_pairs(find_occurrences(records, "play"))
    progress = []
    first = store.layers(play, progress=lambda done, total: progress.append((done, total)))
    assert sum(calls) == 20 and max(calls) == 4 and progress[-1] == (20, 20) and len(progress) == 5
    np.testing.assert_allclose(
        first, occurrence_layers(embedder.embed_sentences, records, find_occurrences(records, "play")), atol=1e-5
    )
    calls.clear()
    again = store.layers(play[:7])  # a sample of what is there: nothing embedded
    assert calls == [] and np.array_equal(again, first[:7])
    store.layers(occurrence_pairs(find_occurrences(records, "bank")))
    assert sum(calls) == 14  # the bank sentences, once


def test_the_probe_reads_its_sample_from_the_store(embedder):
    records = demo_corpus()
    instances = labelled_instances(records)
    assert all(records[item["record"]]["tokens"] == item["tokens"] for item in instances)
    embed, calls = counting(embedder.embed_sentences)
    store = OccurrenceStore(embed, records)
    sample = sample_per_sense(instances, 12, seed=0)
    store.layers([(item["record"], item["target"]) for item in sample])
    embedded = sum(calls)
    results = sense_probe(
        instances, None, 5, 0, 12, vectors_of=lambda items: store.layers([(i["record"], i["target"]) for i in items])
    )
    assert sum(calls) == embedded and embedded == len(sample)  # the probe embedded nothing of its own
    plain = sense_probe(instances, embedder.embed_sentences, 5, 0, 12)
    for got, want in zip(results, plain, strict=True):
        np.testing.assert_allclose(got["layer_accuracy"], want["layer_accuracy"])
        assert got["word_form_accuracy"] == want["word_form_accuracy"] and 0 < got["word_form_accuracy"] <= 1


def test_the_store_measures_its_rate_and_estimates_what_is_missing(embedder, monkeypatch):
    records = demo_corpus()
    occurrences = find_occurrences(records, "play")
    pairs = occurrence_pairs(occurrences)
    monkeypatch.setattr(occurrence_store, "CHUNK_SENTENCES", 4)
    clock = iter(np.arange(0.0, 1000.0, 0.5))  # every embed call takes 0.5 s of this clock
    monkeypatch.setattr(occurrence_store.time, "perf_counter", lambda: float(next(clock)))
    store = OccurrenceStore(embedder.embed_sentences, records)
    assert store.rate is None and store.estimate_seconds(pairs) is None
    assert store.calibrate(pairs) == pytest.approx(4 / 0.5)  # one chunk of 4 sentences in 0.5 s
    missing = len(store.missing_sentences(pairs))
    assert missing == len({r for r, _ in pairs}) - 4 and store.estimate_seconds(pairs) == pytest.approx(missing / 8)
    store.layers(pairs)
    assert store.estimate_seconds(pairs) == 0


def test_chunks_are_bounded_in_tokens_and_a_long_record_is_a_chunk_of_its_own(monkeypatch):
    """The arrays of a chunk are held at once: many long records are never embedded together."""
    monkeypatch.setattr(occurrence_store, "CHUNK_TOKENS", 40)
    records = [{"tokens": ["w"] * n} for n in (3, 30, 25, 90, 2, 2, 2, 5)]
    indices = [7, 0, 1, 2, 3, 4, 5, 6]
    chunks = record_chunks(records, indices)
    assert [i for chunk in chunks for i in chunk] == indices  # in the order given
    for chunk in chunks:
        longest = max(len(records[i]["tokens"]) for i in chunk)
        assert len(chunk) == 1 or (longest + 2) * len(chunk) <= 40
    assert [3] in chunks and len(chunks) == 5
    embed, calls = counting(lambda sentences: [np.zeros((1, len(s), 2), np.float32) for s in sentences])
    OccurrenceStore(embed, records).layers([(i, 0) for i in indices])
    assert calls == [len(chunk) for chunk in record_chunks(records, sorted(indices))]  # the store's corpus order
    assert max(calls) < len(records)
