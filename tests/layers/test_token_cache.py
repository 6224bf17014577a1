"""The char-CNN token cache (``models/token_cache.py``) in the ``elmo`` component and ``ElmoEmbedder``:
the same vectors as without it, never used while gradients flow into the CNN, emptied on new weights."""

from __future__ import annotations

import numpy as np
import pytest
import spacy
import torch
from torch import nn
from util import build_listener_pipeline, tiny_bilm, train_steps

from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.layers import elmo_model_dir_loader
from spacy_contextual.models.chars import batch_to_ids
from spacy_contextual.models.token_cache import TokenVectorCache

torch.set_num_threads(1)
TEXTS = [
    "The bank raised its rates. We sat on the river bank.",
    "naïve café 東京 🙂 <S> </S> " + "y" * 60,
    "",
    "The  bank\nof the river .",
    "Bank bank bank.",
]


def make_nlp(model_dir, **model):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": model})
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(str(model_dir)))
    return nlp


def shim_of(nlp, name="elmo"):
    return nlp.get_pipe(name).model.shims[0]


def layers(nlp, texts=TEXTS):
    docs = nlp.get_pipe("elmo").pipe((nlp.make_doc(text) for text in texts), batch_size=3)
    return [doc._.elmo_data.layers for doc in docs]


def assert_same(first, second):
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)


def uncached_layers(nlp, texts=TEXTS):
    """What the component gives with the cache off: ``BiLM.forward`` on the char ids."""
    shim = shim_of(nlp)
    size, shim.token_cache.max_size = shim.token_cache.max_size, 0
    try:
        return layers(nlp, texts)
    finally:
        shim.token_cache.max_size = size


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("elmo")
    return save_bilm(tiny_bilm(seed=0), root / "a"), save_bilm(tiny_bilm(seed=1), root / "b")


class CountRows:
    """Counts the words the char CNN is run on."""

    def __init__(self, module):
        self.rows = 0
        module.register_forward_hook(self)

    def __call__(self, module, args, output):
        self.rows += args[0].shape[0]


@pytest.mark.parametrize("stateful", [False, True])
def test_pipeline_vectors_with_cache_equal_without_cache(model_dirs, stateful):
    cached = make_nlp(model_dirs[0], stateful=stateful)
    plain = make_nlp(model_dirs[0], stateful=stateful, token_cache_size=0)
    assert shim_of(cached).token_cache.max_size == 50_000
    for _ in range(2):  # the second pass takes every word from the cache
        assert_same(layers(cached), layers(plain))
    assert len(shim_of(cached).token_cache) > 0 and len(shim_of(plain).token_cache) == 0


def test_cached_pipeline_runs_the_char_cnn_once_per_word_type(model_dirs):
    nlp = make_nlp(model_dirs[0])
    counter = CountRows(shim_of(nlp).module.token_encoder)
    first = layers(nlp)
    types = len(shim_of(nlp).token_cache)
    assert counter.rows == types  # <S>, </S> and each distinct word, once
    assert_same(layers(nlp), first)
    assert counter.rows == types


def test_small_cache_is_bounded_and_still_exact(model_dirs):
    nlp = make_nlp(model_dirs[0], token_cache_size=3)
    expected = uncached_layers(nlp)
    assert_same(layers(nlp), expected)
    assert len(shim_of(nlp).token_cache) == 3


def test_frozen_training_uses_the_cache_and_leaves_the_char_cnn_alone(model_dirs):
    nlp, examples, optimizer = build_listener_pipeline(model_dirs[0], frozen=True)
    train_steps(nlp, examples, optimizer, 2)
    cnn = shim_of(nlp).module.token_encoder
    assert len(shim_of(nlp).token_cache) > 0
    assert all(p.grad is None or not p.grad.any() for p in cnn.parameters())


def test_cache_is_not_used_while_gradients_flow_into_the_bilm(model_dirs):
    nlp, examples, optimizer = build_listener_pipeline(model_dirs[0], frozen=False)
    shim = shim_of(nlp)
    cnn = shim.module.token_encoder
    train_steps(nlp, examples, optimizer, 1)  # output layers start at zero: no gradient reaches the biLM before
    before = layers(nlp)  # fills the cache
    assert len(shim.token_cache) > 0
    counter = CountRows(cnn)
    for name in ("elmo", "tagger", "textcat"):  # nlp.update without the optimizer step
        nlp.get_pipe(name).update(examples, sgd=None)
    assert counter.rows > 0  # the CNN ran on the training batch, with gradients
    assert any(p.grad is not None and p.grad.any() for p in cnn.parameters())
    optimizer.learn_rate = 0.1  # a step large enough to move every weight visibly
    nlp.get_pipe("elmo").finish_update(optimizer)
    assert len(shim.token_cache) == 0  # the CNN's weights changed: cache emptied
    after = layers(nlp)
    assert not np.allclose(after[0][0], before[0][0], atol=1e-4)  # token layer (char CNN) moved
    assert_same(after, uncached_layers(nlp))


def test_cache_emptied_when_weights_are_reloaded(model_dirs, tmp_path):
    nlp = make_nlp(model_dirs[0])
    expected_b = layers(make_nlp(model_dirs[1]))
    layers(nlp)
    assert len(shim_of(nlp).token_cache) > 0
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(str(model_dirs[1])))  # shim.load()
    assert len(shim_of(nlp).token_cache) == 0
    assert_same(layers(nlp), expected_b)

    nlp = make_nlp(model_dirs[0])
    layers(nlp)
    make_nlp(model_dirs[1]).to_disk(tmp_path / "b")
    nlp.from_disk(tmp_path / "b")  # from_bytes -> load
    assert len(shim_of(nlp).token_cache) == 0
    assert_same(layers(nlp), expected_b)

    nlp = make_nlp(model_dirs[0])
    layers(nlp)
    with torch.no_grad():  # behind the component's back: the parameters' version counters change
        shim_of(nlp).module.load_state_dict(tiny_bilm(seed=1).state_dict())
    assert_same(layers(nlp), expected_b)


def test_cache_emptied_around_use_params_and_to_device(model_dirs):
    nlp = make_nlp(model_dirs[0])
    shim = shim_of(nlp)
    original = layers(nlp)
    other = tiny_bilm(seed=1).state_dict()
    params = {f"pytorch_{shim.id}_{name}": tensor.numpy() for name, tensor in other.items()}
    with nlp.use_params(params):  # e.g. the optimizer's averages while evaluating
        assert_same(layers(nlp), layers(make_nlp(model_dirs[1])))
    assert_same(layers(nlp), original)
    shim.to_device("cpu", 0)
    assert len(shim.token_cache) == 0


def test_token_cache_stores_nothing_while_gradients_flow():
    cnn = tiny_bilm().token_encoder
    cache = TokenVectorCache()
    sentences = [["a", "b", "a"], ["c"]]
    tokens, mask = cache.token_vectors(cnn, sentences)
    assert tokens.requires_grad and len(cache) == 0
    tokens.sum().backward()
    assert cnn.char_embedding.weight.grad is not None
    with torch.no_grad():
        cached, cached_mask = cache.token_vectors(cnn, sentences)
    assert len(cache) == 5 and torch.equal(mask, cached_mask)  # a, b, c, <S>, </S>
    torch.testing.assert_close(cached, tokens.detach(), atol=1e-6, rtol=0)
    for p in cnn.parameters():
        p.requires_grad_(False)
    assert TokenVectorCache.applies(cnn)  # a frozen CNN may use it with gradients enabled


def test_embedder_cache_follows_new_weights():
    embedder = ElmoEmbedder(tiny_bilm(seed=0))
    sentences = [["The", "bank", "."], ["a", "bank"]]
    embedder.embed_sentences(sentences)
    with torch.no_grad():
        embedder.bilm.load_state_dict(tiny_bilm(seed=1).state_dict())
    assert_same(embedder.embed_sentences(sentences), ElmoEmbedder(tiny_bilm(seed=1)).embed_sentences(sentences))


def test_token_cache_recomputes_when_autocast_changes():
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Embedding(262, 4), nn.Flatten(), nn.Linear(200, 16))  # (n, 50) ids -> (n, 16)
    cache = TokenVectorCache()
    sentence = ["The", "bank", "."]
    with torch.no_grad():
        plain, _ = cache.token_vectors(encoder, [sentence])
        with torch.autocast("cpu", dtype=torch.bfloat16):
            mixed, _ = cache.token_vectors(encoder, [sentence])
            direct = encoder(batch_to_ids([["<S>", *sentence, "</S>"]])[0])
    assert direct.dtype == torch.bfloat16 and mixed.dtype == torch.float32  # the parameter dtype, as BiLM.forward
    assert not torch.equal(mixed, plain)
    torch.testing.assert_close(mixed[0], direct.float(), atol=0, rtol=0)


def held_bytes(obj, seen=None) -> int:
    """Bytes of every tensor storage that ``obj`` keeps alive through its attributes, dicts and lists."""
    seen = set() if seen is None else seen
    if isinstance(obj, torch.Tensor):
        storage = obj.untyped_storage()
        if storage.data_ptr() in seen:
            return 0
        seen.add(storage.data_ptr())
        return storage.nbytes()
    if isinstance(obj, dict):
        return sum(held_bytes(value, seen) for value in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(held_bytes(item, seen) for item in obj)
    if hasattr(obj, "__dict__"):
        return held_bytes(vars(obj), seen)
    return 0


def test_token_cache_keeps_its_rows_and_not_their_batches():
    """On a GPU this is GPU memory: the cache holds at most max_size vectors, whatever batches they came in."""
    cnn = tiny_bilm().token_encoder
    cache = TokenVectorCache(max_size=8)
    row_bytes = cnn.output_dim * 4
    with torch.no_grad():
        for start in range(0, 3000, 1000):
            cache.token_vectors(cnn, [[f"w{i}" for i in range(start, start + 1000)]])
            assert len(cache) == 8
            assert held_bytes(cache) <= 8 * row_bytes
        vectors, _ = cache.token_vectors(cnn, [["w2999", "w2998"]])
        vectors.zero_()  # the caller owns what it gets
        again, _ = cache.token_vectors(cnn, [["w2999", "w2998"]])
        direct = cnn(batch_to_ids([["<S>", "w2999", "w2998", "</S>"]])[0])
    torch.testing.assert_close(again[0], direct, atol=1e-6, rtol=0)


def test_token_cache_evicts_the_least_recently_used_word():
    cnn = tiny_bilm().token_encoder
    cache = TokenVectorCache(max_size=4)
    with torch.no_grad():
        cache.token_vectors(cnn, [["a", "b"]])  # + <S>, </S>: full
        cache.token_vectors(cnn, [["a"]])  # a, <S>, </S> used again; b is the oldest
        cache.token_vectors(cnn, [["c"]])
        assert "b" not in cache and all(w in cache for w in ("a", "c", "<S>", "</S>"))
        cache.max_size = 2  # shrinking keeps the newest
        cache.token_vectors(cnn, [["d"]], boundaries=False)
        assert len(cache) == 2 and "d" in cache
        vectors, _ = cache.token_vectors(cnn, [["a", "d", "c"]], boundaries=False)
        torch.testing.assert_close(vectors[0], cnn(batch_to_ids([["a", "d", "c"]])[0]), atol=1e-6, rtol=0)
