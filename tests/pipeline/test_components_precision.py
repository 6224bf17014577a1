"""``model.precision = "bf16"`` on the ``elmo`` and ``cove`` components (the biLM's weights cast once
for inference, as ``ElmoEmbedder`` does, autocast while training; CoVe autocast; bf16 on the CPU runs
the code paths fp16 runs on a GPU): frozen and fine-tuned, ELMo's token
cache on and off, the vectors stay close to float32 and differ from it, training steps give finite
losses and, unfrozen, move the encoder; the bundled models stay within the recorded budget. Configs
written for the old ``mixed_precision`` key (the ``.v1`` encoders) still load: ``true`` is bf16 on
the CPU."""

import copy
import gzip

import numpy as np
import pytest
import spacy
import torch
from spacy.training import Example
from thinc.api import fix_random_seed
from util import SHARED, bilm_state, build_listener_pipeline, tiny_bilm, tiny_cove_dir, train_steps

from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.layers import cove_model_dir_loader, elmo_model_dir_loader
from spacy_contextual.precision import PrecisionError

TEXTS = ["I like green eggs", "The man rides a horse by the river bank ."]
BUDGET = 0.01  # per-layer relative error, bf16 vs fp32 (benchmarks/precision_accuracy.py)


def vectors(nlp, kind):
    return [doc._.get(f"{kind}_data").layers for doc in nlp.pipe(TEXTS)]


def assert_close_but_lowered(lowered, exact):
    for low, full in zip(lowered, exact, strict=True):
        assert low.dtype == np.float32 and low.shape == full.shape
        np.testing.assert_allclose(low, full, atol=0.05 * float(np.abs(full).max()))
    assert any(not np.array_equal(low, full) for low, full in zip(lowered, exact, strict=True))


@pytest.fixture(scope="module")
def elmo_dir(tmp_path_factory):
    return save_bilm(tiny_bilm(), tmp_path_factory.mktemp("elmo") / "tiny")


@pytest.fixture(scope="module")
def cove_dir(tmp_path_factory):
    return tiny_cove_dir(tmp_path_factory.mktemp("cove") / "tiny")


@pytest.mark.parametrize("frozen", [True, False], ids=["frozen", "fine-tuned"])
def test_elmo_component(elmo_dir, frozen):
    exact_nlp, _, _ = build_listener_pipeline(elmo_dir, frozen=frozen)
    nlp, examples, optimizer = build_listener_pipeline(elmo_dir, frozen=frozen, precision="bf16")
    token_cache = nlp.get_pipe("elmo").model.shims[0].token_cache
    exact = vectors(exact_nlp, "elmo")
    with_cache = vectors(nlp, "elmo")
    token_cache.max_size = 0
    without_cache = vectors(nlp, "elmo")
    assert_close_but_lowered(with_cache, exact)
    assert_close_but_lowered(without_cache, exact)
    before = bilm_state(nlp)
    train_steps(nlp, examples, optimizer, 1)  # frozen: the char CNN without the cache
    token_cache.max_size = 50_000
    losses = train_steps(nlp, examples, optimizer, 1)
    assert np.isfinite(losses["tagger"]) and losses["tagger"] > 0
    after = bilm_state(nlp)
    changed = [name for name in before if not torch.equal(before[name], after[name])]
    assert all(torch.isfinite(tensor).all() for tensor in after.values())
    if frozen:
        assert not changed
        for again, first in zip(vectors(nlp, "elmo"), with_cache, strict=True):
            np.testing.assert_array_equal(again, first)
    else:
        assert len(changed) == len(before)


def test_elmo_component_runs_weights_cast_once_like_the_embedder(elmo_dir):
    nlp, examples, optimizer = build_listener_pipeline(elmo_dir, frozen=False, precision="bf16")
    shim = nlp.get_pipe("elmo").model.shims[0]
    sentences = [text.split() for text in TEXTS]
    embedder = ElmoEmbedder.load(elmo_dir, precision="bf16")
    for layers, expected in zip(vectors(nlp, "elmo"), embedder.embed_sentences(sentences), strict=True):
        np.testing.assert_array_equal(layers, expected)  # the same cast weights, the same float32 cell state
    cast = shim.inference_module()
    assert cast is not shim.module and cast is shim.inference_module()  # cast once, then reused
    assert {p.dtype for p in cast.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in shim.module.parameters()} == {torch.float32}  # what training updates and saves
    before = bilm_state(nlp)
    train_steps(nlp, examples, optimizer, 2)  # the listeners' gradients reach the biLM in the second
    after = bilm_state(nlp)
    assert all(not torch.equal(before[name], after[name]) for name in before)
    assert shim.inference_module() is not cast  # the weights changed: cast again
    updated = ElmoEmbedder(copy.deepcopy(shim.module), precision="bf16")
    for layers, expected in zip(vectors(nlp, "elmo"), updated.embed_sentences(sentences), strict=True):
        np.testing.assert_array_equal(layers, expected)
    assert {p.dtype for p in shim.module.parameters()} == {torch.float32}


def build_cove(cove_dir, frozen, precision):
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("cove", config={"frozen": frozen, "model": {"precision": precision}})
    listener = {"@architectures": "spacy-contextual.CoveListener.v1", "width": 8}
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}})
    nlp.get_pipe("cove").initialize(loader=cove_model_dir_loader(str(cove_dir)))
    words = TEXTS[1].split()
    examples = [Example.from_dict(nlp.make_doc(TEXTS[1]), {"tags": ["N" if i % 2 else "V" for i in range(len(words))]})]
    return nlp, examples, nlp.initialize(lambda: examples)


@pytest.mark.parametrize("frozen", [True, False], ids=["frozen", "fine-tuned"])
def test_cove_component(cove_dir, frozen):
    exact_nlp, _, _ = build_cove(cove_dir, frozen, "fp32")
    nlp, examples, optimizer = build_cove(cove_dir, frozen, "bf16")
    exact = vectors(exact_nlp, "cove")
    lowered = vectors(nlp, "cove")
    assert_close_but_lowered([layers[1:] for layers in lowered], [layers[1:] for layers in exact])
    np.testing.assert_array_equal(lowered[0][0], exact[0][0])  # GloVe is looked up, not computed
    before = bilm_state(nlp, "cove")
    losses = train_steps(nlp, examples, optimizer, 2)
    assert np.isfinite(losses["tagger"]) and losses["tagger"] > 0
    after = bilm_state(nlp, "cove")
    lstm = [name for name in before if name.startswith("encoder.")]
    changed = [name for name in lstm if not torch.equal(before[name], after[name])]
    assert (not changed) if frozen else (len(changed) == len(lstm))
    assert torch.equal(before["source_vectors"], after["source_vectors"])


@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_old_mixed_precision_configs_still_load(elmo_dir, cove_dir, kind):
    loader = {"elmo": elmo_model_dir_loader(str(elmo_dir)), "cove": cove_model_dir_loader(str(cove_dir))}[kind]
    old = {"@architectures": f"spacy-contextual.{kind.capitalize()}Encoder.v1"}

    def component_vectors(model):
        nlp = spacy.blank("en")
        nlp.add_pipe(kind, config={"model": model})
        nlp.get_pipe(kind).initialize(loader=loader)
        return vectors(nlp, kind)

    for old_value, new_value in ((False, "fp32"), (True, "bf16")):  # true: bf16 on the CPU
        before = component_vectors({**old, "mixed_precision": old_value})
        for a, b in zip(before, component_vectors({"precision": new_value}), strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_bad_precision_is_refused():
    nlp = spacy.blank("en")
    with pytest.raises(PrecisionError, match="unknown precision 'float16': use fp32, bf16, fp16"):
        nlp.add_pipe("elmo", config={"model": {"precision": "float16"}})


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_bundled_components_in_bf16_within_the_budget(kind):
    with gzip.open(SHARED / "data" / "lm_corpus" / "valid.txt.gz", "rt", encoding="utf-8") as handle:
        texts = [line.strip() for _, line in zip(range(8), handle, strict=False)]
    layers = {}
    for precision in ("fp32", "bf16"):
        nlp = spacy.blank("en")
        nlp.add_pipe(kind, config={"model": {"precision": precision}})
        nlp.initialize()
        layers[precision] = [doc._.get(f"{kind}_data").layers for doc in nlp.pipe(texts)]
    low, exact = np.concatenate(layers["bf16"], axis=1), np.concatenate(layers["fp32"], axis=1)
    errors = np.linalg.norm(low - exact, axis=(1, 2)) / np.maximum(np.linalg.norm(exact, axis=(1, 2)), 1e-12)
    assert errors.max() < BUDGET and errors[-1] > 0
