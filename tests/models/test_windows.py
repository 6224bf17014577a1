"""Long sentences run in windows, each row's LSTM state carried from window to window in both directions,
equal the whole sentences: the ELMo biLM (``bilm_windows.py``, also stateful and ELMoForManyLangs'
longest-first rows) and the CoVe MT-LSTM (``MTLSTM.encode_in_windows``), in float64 to rounding and in
float32 within a stated budget, rows of any length in one batch; the sentence boundaries only at the true
ends; no LSTM call and no char-CNN call sees more than one window of each row."""

import random

import pytest
import torch
from util import tiny_bilm, write_manylangs_dir

from spacy_contextual.formats.detect import load_elmo
from spacy_contextual.models.bilm_windows import encode_in_windows
from spacy_contextual.models.cove_layers import CoveLayers
from spacy_contextual.models.mtlstm import MTLSTM
from spacy_contextual.models.token_cache import TokenVectorCache
from spacy_contextual.models.windows import batch_windows, replace_rows, select_rows
from spacy_contextual.mt_text import SPECIALS

FLOAT64_TOLERANCE = 1e-12  # measured: at most 3e-16
FLOAT32_TOLERANCE = 2e-5  # absolute; measured: at most 1.7e-6 on the bundled ELMo over 3,000 tokens
WINDOWS = [1, 2, 5, 16, 41, 42, 200]  # down to one position, the longest row less one, and wider than it


def sentence(length: int, seed: int = 0, vocabulary: int = 30) -> list[str]:
    rng = random.Random(seed)
    return [f"w{rng.randrange(vocabulary)}" for _ in range(length)]


def batch(seed: int = 0, vocabulary: int = 30) -> list[list[str]]:
    """Rows of very different lengths, the longest not first, one empty."""
    return [sentence(n, seed + i, vocabulary) for i, n in enumerate((7, 40, 0, 3, 23))]


def whole_layers(bilm, sentences) -> list[torch.Tensor]:
    """Each sentence's (num_layers, len, 2P) from ``bilm.encode_sentences``, without the boundaries."""
    activations, _ = bilm.encode_sentences(sentences)
    stacked = torch.stack(activations)
    return [stacked[:, row, 1 : len(words) + 1] for row, words in enumerate(sentences)]


def windowed_layers(bilm, sentences, window, **kwargs) -> list[torch.Tensor]:
    dtype = next(bilm.parameters()).dtype
    outputs = [torch.full((bilm.num_layers, len(s), bilm.output_dim), float("nan"), dtype=dtype) for s in sentences]
    encode_in_windows(bilm, sentences, outputs, window, **kwargs)
    return outputs


def largest_difference(got, expected) -> float:
    return max(
        float((a.double() - b.double()).abs().max()) if a.numel() else 0.0 for a, b in zip(got, expected, strict=True)
    )


def test_the_windows_of_each_row_cover_it_once_from_either_end():
    assert list(batch_windows([7, 2, 0], 3)) == [([0, 1], [(0, 3), (0, 2)]), ([0], [(3, 6)]), ([0], [(6, 7)])]
    assert list(batch_windows([7, 2], 3, right_to_left=True)) == [
        ([0, 1], [(4, 7), (0, 2)]),
        ([0], [(1, 4)]),
        ([0], [(0, 1)]),
    ]
    assert list(batch_windows([0], 5)) == []
    with pytest.raises(ValueError, match="at least 1"):
        list(batch_windows([5], 0))


def test_rows_are_taken_out_and_put_back():
    h, c = torch.arange(12.0).view(4, 3), torch.arange(8.0).view(1, 4, 2)
    assert torch.equal(select_rows([h], [1, 3])[0], h[[1, 3]])
    assert select_rows([h], [0, 1, 2, 3])[0] is h
    (put,) = replace_rows([c], [2], [torch.full((1, 1, 2), -1.0)], dim=1)
    assert put[0, 2].tolist() == [-1.0, -1.0] and torch.equal(put[0, [0, 1, 3]], c[0, [0, 1, 3]])


@pytest.mark.parametrize("window", WINDOWS)
def test_elmo_in_windows_equals_the_whole_batch_in_float64(window):
    bilm, sentences = tiny_bilm().double(), batch()
    with torch.no_grad():
        assert largest_difference(windowed_layers(bilm, sentences, window), whole_layers(bilm, sentences)) <= (
            FLOAT64_TOLERANCE
        )


def test_elmo_in_windows_is_within_the_float32_budget():
    bilm, sentences = tiny_bilm(), [sentence(300, 1, 200), sentence(120, 2, 200)]
    with torch.no_grad():
        expected = whole_layers(bilm, sentences)
        for window in (7, 64, 301):
            assert largest_difference(windowed_layers(bilm, sentences, window), expected) <= FLOAT32_TOLERANCE


def test_the_boundaries_are_only_at_the_true_ends():
    """Each window run as a sentence of its own (<S> and </S> at every cut, the state not carried) is
    far from the whole sentence; the windowed run is not."""
    bilm, words, window = tiny_bilm().double(), sentence(40), 10
    with torch.no_grad():
        (expected,) = whole_layers(bilm, [words])
        cut = torch.cat(
            [
                layers
                for start in range(0, 40, window)
                for layers in whole_layers(bilm, [words[start : start + window]])
            ],
            1,
        )
        (windowed,) = windowed_layers(bilm, [words], window)
    assert (cut - expected)[1:].abs().max() > 1e-3
    assert (windowed - expected).abs().max() <= FLOAT64_TOLERANCE


def test_a_literal_boundary_word_inside_the_sentence_is_kept_as_the_word():
    bilm, words = tiny_bilm().double(), [["a", "<S>", "b", "</S>", "c", "<S>", "d"]]
    with torch.no_grad():
        assert largest_difference(windowed_layers(bilm, words, 2), whole_layers(bilm, words)) <= FLOAT64_TOLERANCE


def test_no_lstm_or_char_cnn_call_sees_more_than_a_window_of_each_row(monkeypatch):
    bilm, window = tiny_bilm(), 32
    sentences = [sentence(500, 1, 1000), sentence(70, 2, 1000)]
    steps, words = [], []
    run_direction, token_encoder = bilm.run_direction, bilm.token_encoder.forward

    def counted_run(layers, x, lengths, *args):
        steps.append((x.shape[0], x.shape[1], int(lengths.sum())))
        return run_direction(layers, x, lengths, *args)

    def counted_cnn(ids):
        words.append(ids.shape[0])
        return token_encoder(ids)

    monkeypatch.setattr(bilm, "run_direction", counted_run)
    monkeypatch.setattr(bilm.token_encoder, "forward", counted_cnn)
    with torch.no_grad():
        windowed_layers(bilm, sentences, window, token_cache=TokenVectorCache(50))
    assert max(t for _, t, _ in steps) == window and max(b for b, _, _ in steps) == 2
    assert sum(n for _, _, n in steps) == 2 * (502 + 72)  # both sweeps, each position of each row once
    assert max(words) <= 2 * window


@pytest.mark.parametrize("window", [3, 17])
def test_stateful_rows_continue_through_windows(window):
    """Stateful: each batch's rows continue the carried rows; in windows they leave there what the whole
    batch leaves, and the vectors are those of the whole batch."""
    batches = [batch(0)[:3], batch(10), batch(20)[1:]]
    results = {}
    for mode in ("whole", "windows"):
        bilm = tiny_bilm().double()
        bilm.stateful = True
        with torch.no_grad():
            layers = [whole_layers(bilm, b) if mode == "whole" else windowed_layers(bilm, b, window) for b in batches]
        results[mode] = layers, bilm.states
    (whole, (h, c)), (windowed, (h_w, c_w)) = results["whole"], results["windows"]
    for got, expected in zip(windowed, whole, strict=True):
        assert largest_difference(got, expected) <= FLOAT64_TOLERANCE
    assert (h_w - h).abs().max() <= FLOAT64_TOLERANCE and (c_w - c).abs().max() <= FLOAT64_TOLERANCE


def test_manylangs_stateful_rows_are_ranked_by_length_through_windows(tmp_path):
    """ELMoForManyLangs' stateful rows go by rank (longest first): a row continues the same carried row
    whether the batch runs whole or in windows."""
    model = write_manylangs_dir(tmp_path / "manylangs")
    batches = [batch(0), batch(5)[::-1]]
    results = {}
    for mode in ("whole", "windows"):
        bilm = load_elmo(model).double().eval()
        bilm.stateful = True
        with torch.no_grad():
            layers = [whole_layers(bilm, b) if mode == "whole" else windowed_layers(bilm, b, 6) for b in batches]
        results[mode] = layers, bilm.states
    (whole, (h, c)), (windowed, (h_w, c_w)) = results["whole"], results["windows"]
    for got, expected in zip(windowed, whole, strict=True):
        assert largest_difference(got, expected) <= FLOAT64_TOLERANCE
    assert (h_w - h).abs().max() <= FLOAT64_TOLERANCE and (c_w - c).abs().max() <= FLOAT64_TOLERANCE


# -- CoVe ---------------------------------------------------------------------------------------------


def cove_layers(dtype=torch.float64) -> CoveLayers:
    torch.manual_seed(0)
    encoder = MTLSTM(input_dim=8, hidden_dim=6, num_layers=2).eval()
    vocabulary = SPECIALS + [f"w{i}" for i in range(200)]
    vectors = torch.randn(len(vocabulary), 8)
    vectors[: len(SPECIALS)] = 0
    return CoveLayers(encoder, vectors, vocabulary).to(dtype)


def cove_whole(layers, sentences) -> list[torch.Tensor]:
    stacked = layers(*layers.word_ids(sentences))
    return [stacked[row, :, : len(words)] for row, words in enumerate(sentences)]


def cove_windowed(layers, sentences, window) -> list[torch.Tensor]:
    dtype = layers.source_vectors.dtype
    outputs = [torch.full((3, len(words), 12), float("nan"), dtype=dtype) for words in sentences]
    layers.encode_in_windows(sentences, outputs, window)
    return outputs


@pytest.mark.parametrize("window", WINDOWS)
def test_cove_in_windows_equals_the_whole_batch_in_float64(window):
    layers = cove_layers()
    sentences = [s for s in batch(vocabulary=210) if s]  # some words outside the vocabulary; CoVe skips empty ones
    with torch.no_grad():
        assert largest_difference(cove_windowed(layers, sentences, window), cove_whole(layers, sentences)) <= (
            FLOAT64_TOLERANCE
        )


def test_cove_in_windows_is_within_the_float32_budget():
    layers, sentences = cove_layers(torch.float32), [sentence(300, 1, 200), sentence(120, 2, 200)]
    with torch.no_grad():
        expected = cove_whole(layers, sentences)
        for window in (7, 64, 299):
            assert largest_difference(cove_windowed(layers, sentences, window), expected) <= FLOAT32_TOLERANCE


def test_cove_in_windows_runs_no_lstm_over_more_than_a_window_of_each_row(monkeypatch):
    from spacy_contextual.models import mtlstm

    layers, window, seen = cove_layers(), 9, []
    sentences = [sentence(100, 1), sentence(30, 2)]
    run_direction = mtlstm.run_direction

    def counted(lstm, packed, *args):
        seen.append(packed.batch_sizes.tolist())
        return run_direction(lstm, packed, *args)

    monkeypatch.setattr(mtlstm, "run_direction", counted)
    with torch.no_grad():
        cove_windowed(layers, sentences, window)
    assert max(len(sizes) for sizes in seen) == window and max(max(sizes) for sizes in seen) == 2
    assert sum(sum(sizes) for sizes in seen) == 2 * 2 * (100 + 30)  # 2 layers x 2 directions
