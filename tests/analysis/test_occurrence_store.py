"""The shared store of occurrence vectors: each sentence embedded once per pair it holds, in chunks
with progress, the same vectors as embedding in one go, and a sense probe that reads from it."""

import numpy as np
import pytest
from util import tiny_bilm

from spacy_contextual.analysis import occurrence_store
from spacy_contextual.analysis.occurrence_store import OccurrenceStore, occurrence_layers, occurrence_pairs
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
    monkeypatch.setattr(occurrence_store.Timing, "chunk_tokens", lambda self: 40)
    records = demo_corpus()
    embed, calls = counting(embedder.embed_sentences)
    store = OccurrenceStore(embed, records)
    play = occurrence_pairs(find_occurrences(records, "play"))
    tokens = sum(len(records[r]["tokens"]) for r in {r for r, _ in play})
    progress = []
    first = store.layers(play, progress=lambda done, total: progress.append((done, total)))
    assert sum(calls) == 20 and progress[0] == (0, tokens) and progress[-1] == (tokens, tokens)
    steps = [b - a for (a, _), (b, _) in zip(progress, progress[1:], strict=False)]
    assert len(progress) == len(calls) + 1 and max(steps) <= 40
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


def fake_encoder(clock: list[float], tokens_per_second: float):
    """An embed that advances ``clock[0]`` by the time its tokens take at ``tokens_per_second``."""

    def embed(sentences):
        clock[0] += sum(map(len, sentences)) / tokens_per_second
        return [np.zeros((2, len(tokens), 3), dtype=np.float32) for tokens in sentences]

    return embed


def test_chunks_last_about_chunk_seconds_at_the_measured_rate_and_a_long_sentence_is_alone():
    clock = [0.0]
    records = [{"tokens": ["w"] * 10} for _ in range(300)]
    records[150] = {"tokens": ["w"] * 5000}  # a long record
    embed, calls = counting(fake_encoder(clock, tokens_per_second=200.0))
    store = OccurrenceStore(embed, records)
    store.timing.clock = lambda: clock[0]
    store.layers([(r, 0) for r in range(len(records))])
    sizes = [10 * n for n in calls]
    assert sizes[0] == occurrence_store.FIRST_CHUNK_TOKENS - 2  # 51 sentences of 10 tokens: no rate yet
    assert store.rate == pytest.approx(200.0)
    long = next(i for i, n in enumerate(calls) if n == 1)
    assert all(n * 10 <= 200 * occurrence_store.CHUNK_SECONDS for i, n in enumerate(calls[1:], 1) if i != long)
    assert sum(calls) == 300  # every sentence once; the long one in a chunk of its own
    fast = OccurrenceStore(counting(fake_encoder(clock, tokens_per_second=1e6))[0], records[:150])
    fast.timing.clock = lambda: clock[0]
    fast.layers([(r, 0) for r in range(150)])
    sizes = [tokens for tokens, _ in fast.timing.chunks]
    assert all(b <= 2 * max(a, occurrence_store.MIN_CHUNK_TOKENS) for a, b in zip(sizes, sizes[1:], strict=False))
    assert max(sizes) <= occurrence_store.MAX_CHUNK_TOKENS  # a fast encoder's chunks grow, twofold at most


def test_work_stops_between_chunks_and_keeps_what_was_done(embedder, monkeypatch):
    monkeypatch.setattr(occurrence_store.Timing, "chunk_tokens", lambda self: 40)
    records = demo_corpus()
    embed, calls = counting(embedder.embed_sentences)
    store = OccurrenceStore(embed, records)
    pairs = occurrence_pairs(find_occurrences(records, "play"))

    class SessionEnded(Exception):
        pass

    def progress(done, total):
        if done > 0:  # the first chunk is done: the session ends here
            raise SessionEnded

    with pytest.raises(SessionEnded):
        store.layers(pairs, progress)
    assert len(calls) == 1 and not store.lock.locked()  # stopped after one chunk, the store free again
    done = calls[0]
    store.layers(pairs)
    assert sum(calls) == 20 and calls[0] == done  # the rest, not what was done


def test_the_store_measures_its_cost_and_estimates_what_is_missing():
    clock = [0.0]
    records = [{"tokens": ["w"] * (5 + i % 20)} for i in range(4000)]
    embed, calls = counting(fake_encoder(clock, tokens_per_second=250.0))
    store = OccurrenceStore(embed, records)
    store.timing.clock = lambda: clock[0]
    pairs = [(r, 0) for r in range(len(records))]
    assert store.cost is None and store.estimate_seconds(pairs) is None
    assert store.calibrate(pairs) == pytest.approx(1 / 250)  # seconds a token
    embedded = sorted(set(range(len(records))) - set(store.missing_sentences(pairs)))
    assert embedded[0] < 200 and embedded[-1] > 3800  # drawn across the file, not its first sentences
    assert len(calls) == 3  # a first chunk, then two of the embedding's size, timed
    estimate = store.estimate_seconds(pairs)
    assert estimate == pytest.approx(store.missing_tokens(pairs) / 250)
    started = clock[0]
    store.layers(pairs)
    assert clock[0] - started == pytest.approx(estimate)  # what the estimate said
    assert store.estimate_seconds(pairs) == 0


def test_chunks_are_bounded_in_tokens_and_a_long_record_is_a_chunk_of_its_own(monkeypatch):
    """The arrays of a chunk are held at once: many long records are never embedded together."""
    monkeypatch.setattr(occurrence_store, "MAX_CHUNK_TOKENS", 40)
    monkeypatch.setattr(occurrence_store, "MIN_CHUNK_TOKENS", 1)
    records = [{"tokens": ["w"] * n} for n in (3, 30, 25, 90, 2, 2, 2, 5)]
    embed, calls = counting(lambda sentences: [np.zeros((1, len(s), 2), np.float32) for s in sentences])
    store = OccurrenceStore(embed, records)
    store.timing.add(10**6, 1.0)  # a fast encoder: every chunk as large as the bound allows
    store.layers([(i, 0) for i in range(len(records))])
    sizes = [tokens for tokens, _ in store.timing.chunks[1:]]
    assert sum(calls) == len(records) and 90 in sizes  # the long record alone
    assert all(size <= 40 for size in sizes if size != 90) and max(calls) < len(records)
