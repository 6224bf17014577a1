"""One long sentence run in windows, each LSTM direction's state carried from window to window, equals the
whole sentence: the ELMo biLM (``bilm_windows.py``, also stateful and ELMoForManyLangs) and the CoVe
MT-LSTM (``MTLSTM.encode_in_windows``), in float64 to rounding and in float32 within a stated budget; the
sentence boundaries only at the true ends; no LSTM run and no char-CNN call sees more than one window."""

import random

import pytest
import torch
from util import tiny_bilm

from spacy_contextual.models.bilm_windows import encode_in_windows
from spacy_contextual.models.cove_layers import CoveLayers
from spacy_contextual.models.mtlstm import MTLSTM
from spacy_contextual.models.text import SPECIALS
from spacy_contextual.models.token_cache import TokenVectorCache
from spacy_contextual.models.windows import windows

FLOAT64_TOLERANCE = 1e-12  # measured: at most 3e-16
FLOAT32_TOLERANCE = 2e-5  # absolute; measured: at most 1.7e-6 on the bundled ELMo over 3,000 tokens
WINDOWS = [1, 2, 5, 16, 41, 42, 200]  # down to one position, the sentence less one, and wider than it


def sentence(length: int, seed: int = 0, vocabulary: int = 30) -> list[str]:
    rng = random.Random(seed)
    return [f"w{rng.randrange(vocabulary)}" for _ in range(length)]


def whole_layers(bilm, words, rows=None) -> torch.Tensor:
    """(num_layers, len(words), 2P) of ``bilm.encode_sentences`` without the boundaries."""
    activations, _ = bilm.encode_sentences([words], rows=rows)
    return torch.stack(activations)[:, 0, 1 : len(words) + 1]


def windowed_layers(bilm, words, window, **kwargs) -> torch.Tensor:
    out = torch.full((bilm.num_layers, len(words), bilm.output_dim), float("nan"), dtype=torch.float64)
    encode_in_windows(bilm, words, out, window, **kwargs)
    return out


def test_windows_cover_the_positions_once_from_either_end():
    assert list(windows(7, 3)) == [(0, 3), (3, 6), (6, 7)]
    assert list(windows(7, 3, right_to_left=True)) == [(4, 7), (1, 4), (0, 1)]
    assert list(windows(3, 5)) == [(0, 3)] and list(windows(0, 5)) == []
    with pytest.raises(ValueError, match="at least 1"):
        list(windows(5, 0))


@pytest.mark.parametrize("window", WINDOWS)
def test_elmo_in_windows_equals_the_whole_sentence_in_float64(window):
    bilm, words = tiny_bilm().double(), sentence(40)
    with torch.no_grad():
        expected, got = whole_layers(bilm, words), windowed_layers(bilm, words, window)
    assert (got - expected).abs().max() <= FLOAT64_TOLERANCE


def test_elmo_in_windows_is_within_the_float32_budget():
    bilm, words = tiny_bilm(), sentence(300, vocabulary=200)
    with torch.no_grad():
        expected = whole_layers(bilm, words).double()
        for window in (7, 64, 299):
            assert (windowed_layers(bilm, words, window) - expected).abs().max() <= FLOAT32_TOLERANCE


def test_the_boundaries_are_only_at_the_true_ends():
    """Each window run as a sentence of its own (<S> and </S> at every cut, the state not carried) is
    far from the whole sentence; the windowed run is not."""
    bilm, words, window = tiny_bilm().double(), sentence(40), 10
    with torch.no_grad():
        expected = whole_layers(bilm, words)
        cut = torch.cat([whole_layers(bilm, words[start:stop]) for start, stop in windows(len(words), window)], 1)
        windowed = windowed_layers(bilm, words, window)
    assert (cut - expected)[1:].abs().max() > 1e-3
    assert (windowed - expected).abs().max() <= FLOAT64_TOLERANCE


def test_a_literal_boundary_word_inside_the_sentence_is_kept_as_the_word():
    bilm, words = tiny_bilm().double(), ["a", "<S>", "b", "</S>", "c", "<S>", "d"]
    with torch.no_grad():
        assert (windowed_layers(bilm, words, 2) - whole_layers(bilm, words)).abs().max() <= FLOAT64_TOLERANCE


def test_no_lstm_run_or_char_cnn_call_sees_more_than_a_window(monkeypatch):
    bilm, words, window = tiny_bilm(), sentence(500, vocabulary=1000), 32
    seen_steps, seen_words = [], []
    run_direction, token_encoder = bilm.run_direction, bilm.token_encoder.forward
    monkeypatch.setattr(
        bilm, "run_direction", lambda layers, x, *a: seen_steps.append(x.shape[1]) or run_direction(layers, x, *a)
    )
    monkeypatch.setattr(
        bilm.token_encoder, "forward", lambda ids: seen_words.append(ids.shape[0]) or token_encoder(ids)
    )
    with torch.no_grad():
        windowed_layers(bilm, words, window, token_cache=TokenVectorCache(50))
    assert max(seen_steps) == window and sum(seen_steps) == 2 * (len(words) + 2)  # both sweeps, each position once
    assert max(seen_words) <= window and sum(seen_words) >= len(set(words))


@pytest.mark.parametrize("window", [3, 17])
def test_stateful_windows_continue_and_leave_the_carried_row(window):
    """A stateful biLM: a long sentence in windows continues its carried row and leaves there what the
    whole sentence leaves; the other rows are untouched."""
    batches = [[sentence(5, 1), sentence(3, 2), sentence(6, 3)], [sentence(4, 4), sentence(40, 5), sentence(2, 6)]]
    results = {}
    for mode in ("whole", "windows"):
        bilm = tiny_bilm().double()
        bilm.stateful = True
        with torch.no_grad():
            bilm.encode_sentences(batches[0])
            first, long, last = batches[1]
            if mode == "whole":
                activations, _ = bilm.encode_sentences(batches[1])
                long_layers = torch.stack(activations)[:, 1, 1 : len(long) + 1]
            else:
                bilm.encode_sentences([first, last], rows=[0, 2])
                long_layers = windowed_layers(bilm, long, window, row=1)
        results[mode] = long_layers, bilm.states
    (whole, (h, c)), (windowed, (h_w, c_w)) = results["whole"], results["windows"]
    assert (windowed - whole).abs().max() <= FLOAT64_TOLERANCE
    assert (h_w - h).abs().max() <= FLOAT64_TOLERANCE and (c_w - c).abs().max() <= FLOAT64_TOLERANCE


def test_a_stateful_first_run_in_windows_starts_from_zero_and_is_carried():
    bilm = tiny_bilm().double()
    bilm.stateful = True
    long = sentence(30, 7)
    with torch.no_grad():
        expected = whole_layers(tiny_bilm().double(), long)  # a fresh biLM: zero state
        assert (windowed_layers(bilm, long, 4, row=2) - expected).abs().max() <= FLOAT64_TOLERANCE
    h, c = bilm.states
    assert h.shape[1] == 3 and (h[:, :2] == 0).all() and (c[:, :2] == 0).all() and (h[:, 2] != 0).any()


# -- CoVe ---------------------------------------------------------------------------------------------


def cove_layers(dtype=torch.float64) -> CoveLayers:
    torch.manual_seed(0)
    encoder = MTLSTM(input_dim=8, hidden_dim=6, num_layers=2).eval()
    vocabulary = SPECIALS + [f"w{i}" for i in range(200)]
    vectors = torch.randn(len(vocabulary), 8)
    vectors[: len(SPECIALS)] = 0
    return CoveLayers(encoder, vectors, vocabulary).to(dtype)


def cove_whole(layers, words) -> torch.Tensor:
    return layers(*layers.word_ids([words]))[0]


def cove_windowed(layers, words, window) -> torch.Tensor:
    out = torch.full((3, len(words), 12), float("nan"), dtype=layers.source_vectors.dtype)
    layers.encode_in_windows(words, out, window)
    return out


@pytest.mark.parametrize("window", WINDOWS)
def test_cove_in_windows_equals_the_whole_sentence_in_float64(window):
    layers, words = cove_layers(), sentence(41, vocabulary=210)  # some words outside the vocabulary
    with torch.no_grad():
        assert (cove_windowed(layers, words, window) - cove_whole(layers, words)).abs().max() <= FLOAT64_TOLERANCE


def test_cove_in_windows_is_within_the_float32_budget():
    layers, words = cove_layers(torch.float32), sentence(300, vocabulary=200)
    with torch.no_grad():
        expected = cove_whole(layers, words)
        for window in (7, 64, 299):
            assert (cove_windowed(layers, words, window) - expected).abs().max() <= FLOAT32_TOLERANCE


def test_cove_in_windows_runs_no_lstm_over_more_than_a_window(monkeypatch):
    from spacy_contextual.models import mtlstm

    layers, words, window, seen = cove_layers(), sentence(100), 9, []
    run_direction = mtlstm.run_direction
    monkeypatch.setattr(
        mtlstm, "run_direction", lambda lstm, x, *a: seen.append(x.shape[1]) or run_direction(lstm, x, *a)
    )
    with torch.no_grad():
        cove_windowed(layers, words, window)
    assert max(seen) == window and sum(seen) == 2 * 2 * len(words)  # 2 layers x 2 directions
