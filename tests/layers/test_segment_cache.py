"""The segment cache (``pipeline/segment_cache.py``, ``model.segment_cache_mb``): a frozen encoder
encodes each sentence once, gives the same vectors as without the cache, and forgets them whenever
its weights change."""

from __future__ import annotations

import numpy as np
import pytest
import spacy
import torch
from util import build_listener_pipeline, tiny_bilm, tiny_cove_dir, train_steps

from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.layers import cove_model_dir_loader, elmo_model_dir_loader
from spacy_contextual.layers.segment_cache import MIB, SegmentCache

torch.set_num_threads(1)
TEXTS = [
    "The bank raised its rates. We sat on the river bank.",
    "",
    "The  bank\nof the river .",
    "The bank raised its rates. We sat on the river bank.",  # the same text again in the batch
    "Bank bank bank.",
]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {
        "elmo": (save_bilm(tiny_bilm(seed=0), root / "elmo_a"), save_bilm(tiny_bilm(seed=1), root / "elmo_b")),
        "cove": (tiny_cove_dir(root / "cove_a"),),
    }


LOADERS = {"elmo": elmo_model_dir_loader, "cove": cove_model_dir_loader}


def make_nlp(kind, model_dir, **model):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(kind, config={"model": model})
    nlp.get_pipe(kind).initialize(loader=LOADERS[kind](str(model_dir)))
    return nlp


def layers(nlp, kind="elmo", texts=TEXTS):
    return [doc._.get(f"{kind}_data").layers for doc in nlp.pipe(texts, batch_size=2)]


def assert_same(first, second):
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)


class CountModuleCalls:
    """Counts forward calls of ``module`` and its submodules."""

    def __init__(self, module):
        self.calls = 0
        self.handles = [m.register_forward_hook(self) for m in module.modules()]

    def __call__(self, module, args, output):
        self.calls += 1


def cache_of(nlp, kind="elmo"):
    return nlp.get_pipe(kind).model.shims[0].segment_cache


@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_cached_segments_are_not_encoded_again_and_match_fresh_ones(model_dirs, kind):
    cached = make_nlp(kind, model_dirs[kind][0], segment_cache_mb=8)
    plain = make_nlp(kind, model_dirs[kind][0])
    assert not cache_of(plain, kind).enabled  # off by default
    first = layers(cached, kind)
    # distinct sentences: the two of the first text, "The bank of the river .", "Bank bank bank."
    assert len(cache_of(cached, kind)) == 4
    counter = CountModuleCalls(cached.get_pipe(kind).model.shims[0].module)
    second = layers(cached, kind)
    assert counter.calls == 0  # every sentence came from the cache
    assert_same(first, layers(plain, kind))
    assert_same(second, first)


def test_cache_keeps_what_it_has_once_full():
    cache = SegmentCache(max_mb=1)
    half = np.zeros(MIB // 2 // 4 + 1, dtype="float32")  # just over half a MiB
    cache.put(("a",), half)
    cache.put(("b",), half)  # would pass the limit: not stored, nothing evicted
    assert len(cache) == 1 and cache.get(("b",)) is None and cache.get(("a",)) is not None
    assert cache.nbytes == half.nbytes
    cache.validate("weights 1")
    assert len(cache) == 0  # another weights signature: emptied
    with pytest.raises(ValueError, match="segment_cache_mb"):
        SegmentCache(max_mb=-1)


def test_stateful_encoder_cannot_cache_segments():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="stateful = false"):
        nlp.add_pipe("elmo", config={"model": {"stateful": True, "segment_cache_mb": 8}})


def test_frozen_training_encodes_each_sentence_once(model_dirs):
    nlp, examples, optimizer = build_listener_pipeline(model_dirs["elmo"][0], frozen=True, segment_cache_mb=8)
    train_steps(nlp, examples, optimizer, 1)
    assert len(cache_of(nlp)) == len(examples)
    counter = CountModuleCalls(nlp.get_pipe("elmo").model.shims[0].module)
    train_steps(nlp, examples, optimizer, 2)  # the listeners still learn from the cached layers
    assert counter.calls == 0
    plain, _, _ = build_listener_pipeline(model_dirs["elmo"][0], frozen=True)
    texts = [eg.reference.text for eg in examples]
    assert_same(layers(nlp, texts=texts), layers(plain, texts=texts))


def test_fine_tuning_never_reads_stale_segments(model_dirs):
    nlp, examples, optimizer = build_listener_pipeline(model_dirs["elmo"][0], frozen=False, segment_cache_mb=8)
    texts = [eg.reference.text for eg in examples]
    train_steps(nlp, examples, optimizer, 1)  # output layers start at zero: no gradient reaches the biLM before
    before = layers(nlp, texts=texts)  # inference fills the cache
    assert len(cache_of(nlp)) == len(examples)
    optimizer.learn_rate = 0.1
    counter = CountModuleCalls(nlp.get_pipe("elmo").model.shims[0].module)
    train_steps(nlp, examples, optimizer, 1)
    assert counter.calls > 0  # the update encoded its batch with gradients, not from the cache
    after = layers(nlp, texts=texts)
    assert not np.allclose(after[0], before[0], atol=1e-4)  # the biLM moved and the cache followed
    cache = cache_of(nlp)
    size, cache.max_mb = cache.max_mb, 0
    assert_same(after, layers(nlp, texts=texts))  # = encoded without the cache
    cache.max_mb = size


def test_new_weights_empty_the_cache(model_dirs, tmp_path):
    first, second = model_dirs["elmo"]
    expected = layers(make_nlp("elmo", second))
    nlp = make_nlp("elmo", first, segment_cache_mb=8)
    layers(nlp)
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(str(second)))
    assert len(cache_of(nlp)) == 0
    assert_same(layers(nlp), expected)

    nlp = make_nlp("elmo", first, segment_cache_mb=8)
    layers(nlp)
    with torch.no_grad():  # behind the component's back: the parameters' version counters change
        nlp.get_pipe("elmo").model.shims[0].module.load_state_dict(tiny_bilm(seed=1).state_dict())
    assert_same(layers(nlp), expected)
