"""``precision`` on both embedders: ELMo (token cache on and off, stateless and stateful), the CoVe
layers and CoVe translation (greedy and beam), the bundled models within the accuracy budget that
``benchmarks/precision_accuracy.py`` records, and the setting itself (choices, fp16 only on CUDA, the
once-per-process warning where bf16 is emulated). bf16 on the CPU stands in for fp16 on CUDA; the
arrays stay float32, close to the float32 run, and differ from it (the low precision ran)."""

import gzip
import warnings

import numpy as np
import pytest
import torch
from util import SHARED, tiny_bilm, tiny_cove_dir, tiny_cove_mt_dir

from spacy_contextual import precision
from spacy_contextual.embedders import load_encoder
from spacy_contextual.embedders.cove_embedder import CoveEmbedder
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.precision import PrecisionError, resolve_precision

SENTENCES = [["The", "bank", "closed", "."], ["Rivers", "flood"], [], ["a", "man", "rides", "a", "horse"]]
BUDGET = 0.01  # per-layer relative error, bf16 vs fp32: 0.0056 measured on lm_corpus valid (bundled models)
CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def quiet_bf16_warning(monkeypatch):
    """Tests here see the emulated-bf16 warning only where they ask for it."""
    monkeypatch.setattr(precision, "_warned_slow_bf16", True)


def relative_errors(low: list[np.ndarray], exact: list[np.ndarray]) -> np.ndarray:
    """||low_j - exact_j||_F / ||exact_j||_F per layer j, over all tokens."""
    low_all, exact_all = np.concatenate(low, axis=1), np.concatenate(exact, axis=1)
    return np.linalg.norm(low_all - exact_all, axis=(1, 2)) / np.linalg.norm(exact_all, axis=(1, 2))


def valid_sentences(lines: int) -> list[list[str]]:
    with gzip.open(SHARED / "data" / "lm_corpus" / "valid.txt.gz", "rt", encoding="utf-8") as handle:
        return [line.split() for _, line in zip(range(lines), handle, strict=False)]


def assert_close_but_lowered(lowered, exact):
    assert len(lowered) == len(exact)
    for low, full in zip(lowered, exact, strict=True):
        assert low.dtype == np.float32 and low.shape == full.shape
        np.testing.assert_allclose(low, full, atol=0.05 * max(float(np.abs(full).max(initial=0)), 1e-3))
    assert any(not np.array_equal(low, full) for low, full in zip(lowered, exact, strict=True))


@pytest.mark.parametrize("token_cache_size", [0, 50_000], ids=["no-token-cache", "token-cache"])
@pytest.mark.parametrize("stateful", [False, True], ids=["stateless", "stateful"])
def test_elmo_in_bf16(token_cache_size, stateful):
    def embed(precision):
        bilm = tiny_bilm()
        bilm.stateful = stateful
        embedder = ElmoEmbedder(bilm, token_cache_size=token_cache_size, precision=precision)
        return embedder, embedder.embed_sentences(SENTENCES, batch_size=2) + embedder.embed_sentences(SENTENCES[:2])

    embedder, lowered = embed("bf16")
    assert_close_but_lowered(lowered, embed("fp32")[1])
    assert {p.dtype for p in embedder.bilm.parameters()} == {torch.bfloat16}  # cast once, when constructed
    if stateful:  # the carried cell state stays float32
        assert embedder.bilm.carried_h.dtype == torch.bfloat16 and embedder.bilm.carried_c.dtype == torch.float32


def test_cove_layers_in_bf16(tmp_path):
    model = tiny_cove_dir(tmp_path / "cove")
    exact = CoveEmbedder.load(model).embed_sentences(SENTENCES)
    assert_close_but_lowered(CoveEmbedder.load(model, precision="bf16").embed_sentences(SENTENCES), exact)


@pytest.mark.parametrize("beam", [1, 3], ids=["greedy", "beam"])
def test_cove_translation_in_bf16(tmp_path, beam):
    model = tiny_cove_mt_dir(tmp_path / "mt")
    sentences = ["a man plays a guitar .", "the dog", ""]
    exact = CoveEmbedder.load(model).translate(sentences, beam=beam, max_length=8)
    lowered = CoveEmbedder.load(model, precision="bf16").translate(sentences, beam=beam, max_length=8)
    for low, full in zip(lowered, exact, strict=True):
        assert low.tokens == full.tokens and low.source == full.source
        assert low.attention.dtype == np.float32 and low.attention.shape == full.attention.shape
        np.testing.assert_allclose(low.attention, full.attention, atol=0.02)
        np.testing.assert_allclose(low.attention.sum(-1), 1.0, atol=0.02)
    assert not np.array_equal(lowered[0].attention, exact[0].attention)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_bundled_models_in_bf16_within_the_budget(kind):
    sentences = [s for s in valid_sentences(12) if s]
    exact = load_encoder(kind).embed_sentences(sentences)
    errors = relative_errors(load_encoder(kind, precision="bf16").embed_sentences(sentences), exact)
    assert errors.max() < BUDGET
    assert errors[-1] > 0  # the top layer ran in bf16


def test_the_precision_setting():
    assert resolve_precision("fp32", CPU) == "fp32" and resolve_precision("bf16", CPU) == "bf16"
    assert resolve_precision(precision.MIXED, CPU) == "bf16"  # the components' old mixed_precision = true
    with pytest.raises(PrecisionError, match="unknown precision 'int4': use fp32, bf16, fp16"):
        resolve_precision("int4", CPU)
    with pytest.raises(PrecisionError, match="fp16 runs on CUDA only; use bf16"):
        ElmoEmbedder(tiny_bilm(), precision="fp16")


def test_bf16_warns_once_where_it_is_emulated(monkeypatch):
    monkeypatch.setattr(precision, "_warned_slow_bf16", False)
    monkeypatch.setattr(precision, "bf16_is_fast", lambda: False)
    with pytest.warns(UserWarning, match="no native bf16") as caught:
        ElmoEmbedder(tiny_bilm(), precision="bf16")
        ElmoEmbedder(tiny_bilm(), precision="bf16")
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    monkeypatch.setattr(precision, "_warned_slow_bf16", False)
    monkeypatch.setattr(precision, "bf16_is_fast", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ElmoEmbedder(tiny_bilm(), precision="bf16")


def test_a_model_file_is_read_in_its_precision_resolved_once(tiny_model_dir, monkeypatch):
    from spacy_contextual.embedders import elmo_embedder as elmo_module

    resolved = []
    monkeypatch.setattr(
        elmo_module, "resolve_precision", lambda name, device: resolved.append(name) or resolve_precision(name, device)
    )
    embedder = ElmoEmbedder.load(tiny_model_dir, precision="bf16")
    assert resolved == ["bf16"] and {p.dtype for p in embedder.bilm.parameters()} == {torch.bfloat16}
    monkeypatch.setattr(elmo_module, "load_elmo", lambda *a, **k: pytest.fail("read before the precision is checked"))
    with pytest.raises(PrecisionError, match="unknown precision 'int4'"):
        ElmoEmbedder.load(tiny_model_dir, precision="int4")
