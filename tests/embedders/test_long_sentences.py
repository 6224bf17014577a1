"""``max_window_tokens`` on both embedders: a batch holding a sentence longer than it is embedded in
windows, with the vectors it gets whole (short and empty neighbours, stateless and stateful rows,
ELMoForManyLangs' longest-first rows), in fp32 and bf16; the dashboard's occurrence store goes through
it; a bad value is one line."""

import random

import numpy as np
import pytest
import torch
from util import tiny_bilm, tiny_cove_dir, write_manylangs_dir

from spacy_contextual import precision
from spacy_contextual.analysis.occurrence_store import OccurrenceStore
from spacy_contextual.batching import MAX_WINDOW_TOKENS
from spacy_contextual.embedders.cove_embedder import CoveEmbedder
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.errors import ContextualError
from spacy_contextual.models import bilm_windows

FP32_TOLERANCE = 2e-5  # absolute, as tests/models/test_windows.py
BF16_TOLERANCE = 2e-5  # windows change no bf16 arithmetic: the same products, the state carried as it is kept
COVE_WORDS = ["the", "bank", "river", "money", "loan", "water", "green", "eat"]  # some in tiny_cove_dir's vocabulary


def words(length: int, seed: int, vocabulary: list[str] | None = None) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(vocabulary) if vocabulary else f"w{rng.randrange(60)}" for _ in range(length)]


def batch(vocabulary=None) -> list[list[str]]:
    """Short, empty and long sentences mixed, the long ones not first."""
    return [words(5, 1, vocabulary), words(70, 2, vocabulary), [], words(3, 3, vocabulary), words(45, 4, vocabulary)]


@pytest.fixture(autouse=True)
def quiet_bf16_warning(monkeypatch):
    monkeypatch.setattr(precision, "_warned_slow_bf16", True)


def assert_same(windowed, whole, tolerance):
    assert len(windowed) == len(whole)
    for got, expected in zip(windowed, whole, strict=True):
        assert got.dtype == np.float32 and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance)


@pytest.mark.parametrize("dtype, tolerance", [("fp32", FP32_TOLERANCE), ("bf16", BF16_TOLERANCE)])
def test_elmo_long_sentences_in_windows_equal_them_whole(dtype, tolerance, monkeypatch):
    windowed_calls = []
    monkeypatch.setattr(bilm_windows, "batch_windows", spy(bilm_windows.batch_windows, windowed_calls))
    whole = ElmoEmbedder(tiny_bilm(), precision=dtype).embed_sentences(batch(), batch_size=3)
    assert not windowed_calls  # the default limit is far above these sentences
    windowed = ElmoEmbedder(tiny_bilm(), precision=dtype, max_window_tokens=8).embed_sentences(batch(), batch_size=3)
    assert windowed_calls  # the long ones ran in windows
    assert_same(windowed, whole, tolerance)


@pytest.mark.parametrize("manylangs", [False, True], ids=["bilm-tf", "manylangs"])
def test_stateful_rows_carry_through_windows(tmp_path, manylangs):
    """Stateful: batches in input order, row i continuing carried row i (ELMoForManyLangs: the sentence of
    rank i); a batch run in windows leaves in every row what it leaves run whole."""
    sentences = batch() + batch()[::-1] + batch()
    if manylangs:
        model = write_manylangs_dir(tmp_path / "manylangs")

        def load(**options):
            return ElmoEmbedder.load(model, stateful=True, **options)
    else:

        def load(**options):
            bilm = tiny_bilm()
            bilm.stateful = True
            return ElmoEmbedder(bilm, **options)

    whole_embedder, windowed_embedder = load(), load(max_window_tokens=6)
    whole = whole_embedder.embed_sentences(sentences, batch_size=4)
    windowed = windowed_embedder.embed_sentences(sentences, batch_size=4)
    assert_same(windowed, whole, FP32_TOLERANCE)
    for carried, expected in zip(windowed_embedder.bilm.states, whole_embedder.bilm.states, strict=True):
        torch.testing.assert_close(carried, expected, rtol=0, atol=FP32_TOLERANCE)


@pytest.mark.parametrize("dtype, tolerance", [("fp32", FP32_TOLERANCE), ("bf16", 0.01)])
def test_cove_long_sentences_in_windows_equal_them_whole(tmp_path, dtype, tolerance):
    """bf16: torch's LSTM kernels round products of another size differently, as they do for a sentence in
    another batch (0.0078 here, one bf16 step at values near 2; 0.0078 too between a sentence alone and in
    its batch): within 0.01."""
    model = tiny_cove_dir(tmp_path / "cove")
    sentences = batch(COVE_WORDS)
    whole = CoveEmbedder.load(model, precision=dtype).embed_sentences(sentences, batch_size=3)
    windowed = CoveEmbedder.load(model, precision=dtype, max_window_tokens=7).embed_sentences(sentences, batch_size=3)
    assert_same(windowed, whole, tolerance)
    assert all((array[0, :, 8:] == 0).all() for array in windowed)  # GloVe zero-padded to the layers' width


def test_the_dashboards_occurrence_store_embeds_a_long_record_in_windows(monkeypatch):
    records = [{"tokens": words(90, 5)}, {"tokens": words(4, 6)}]
    pairs = [(0, 0), (0, 89), (1, 2)]
    whole = OccurrenceStore(ElmoEmbedder(tiny_bilm()).embed_sentences, records).layers(pairs)
    windowed_calls = []
    monkeypatch.setattr(bilm_windows, "batch_windows", spy(bilm_windows.batch_windows, windowed_calls))
    embedder = ElmoEmbedder(tiny_bilm(), max_window_tokens=16)
    np.testing.assert_allclose(OccurrenceStore(embedder.embed_sentences, records).layers(pairs), whole, atol=2e-5)
    assert windowed_calls


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "8"])
@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_a_bad_window_is_one_line(tmp_path, kind, value):
    with pytest.raises(ContextualError, match=r"max_window_tokens must be a whole number of at least 1") as error:
        if kind == "elmo":
            ElmoEmbedder(tiny_bilm(), max_window_tokens=value)
        else:
            CoveEmbedder.load(tiny_cove_dir(tmp_path / "cove"), max_window_tokens=value)
    assert "\n" not in str(error.value) and f"{MAX_WINDOW_TOKENS:,}" in str(error.value)


def spy(function, calls: list):
    def called(*args, **kwargs):
        calls.append(args)
        return function(*args, **kwargs)

    return called
