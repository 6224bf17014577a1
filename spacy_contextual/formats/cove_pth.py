"""The published CoVe encoder ``wmtlstm-*.pth`` (salesforce/cove), from a local path, over GloVe.

A plain ``nn.LSTM(300, 300, num_layers=2, bidirectional=True)`` state dict: 16 tensors, no key
prefix. Loaded with ``torch.load(weights_only=True)`` (``weights_only.py``: no code runs), memory-mapped where
the file is in the zip format (so its tensors can be no larger than the file); every key and shape
is checked, before anything is copied, and a mismatch names the key, the expected and the found
shape. The file holds only the MT-LSTM; its input vectors come from the user's GloVe text file
(glove.840B.300d, looked up lowercased: the first, most frequent, row of each lowercased form wins).
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

import torch

from ..errors import ContextualError
from ..models.cove_layers import CoveLayers
from ..models.mtlstm import MTLSTM
from ..mt_text import SPECIALS
from ..types import PathLike
from .weights_only import load_weights_only
from .word_vectors import load_vectors

INPUT_DIM, HIDDEN_DIM, NUM_LAYERS = 300, 300, 2


class CovePthError(ContextualError):
    """A file that is not the published CoVe MT-LSTM state dict."""


def expected_shapes(
    input_dim: int = INPUT_DIM, hidden: int = HIDDEN_DIM, layers: int = NUM_LAYERS
) -> dict[str, tuple[int, ...]]:
    shapes = {}
    for layer in range(layers):
        layer_input = input_dim if layer == 0 else 2 * hidden
        for suffix in ("", "_reverse"):
            shapes[f"weight_ih_l{layer}{suffix}"] = (4 * hidden, layer_input)
            shapes[f"weight_hh_l{layer}{suffix}"] = (4 * hidden, hidden)
            shapes[f"bias_ih_l{layer}{suffix}"] = (4 * hidden,)
            shapes[f"bias_hh_l{layer}{suffix}"] = (4 * hidden,)
    return shapes


def validate_cove_state_dict(state: object, source: str = "state dict") -> dict[str, torch.Tensor]:
    if not isinstance(state, dict):
        raise CovePthError(f"{source} holds a {type(state).__name__}, not a state dict of tensors")
    expected = expected_shapes()
    keys = set(state)
    missing, unexpected = sorted(set(expected) - keys), sorted(keys - set(expected))
    if missing or unexpected:
        hint = ""
        if unexpected and all("." in k for k in unexpected):
            hint = " (keys carry a module prefix such as 'rnn.'; the published file has none: strip it)"
        raise CovePthError(
            f"{source} is not the CoVe MT-LSTM state dict: missing keys {missing}, unexpected keys {unexpected}{hint}"
        )
    for key, shape in expected.items():
        value = state[key]
        if not isinstance(value, torch.Tensor):
            raise CovePthError(f"{source}: {key} is a {type(value).__name__}, not a tensor")
        if tuple(value.shape) != shape:
            raise CovePthError(
                f"{source}: {key} has shape {tuple(value.shape)}, expected {shape} (nn.LSTM(300, 300, num_layers=2, "
                "bidirectional=True))"
            )
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise CovePthError(
                f"{source}: {key} holds NaN or infinite values; these weights are unusable (a diverged training run "
                "or a damaged file)"
            )
    return state  # type: ignore[return-value]


def load_cove_pth(path: PathLike) -> MTLSTM:
    """An ``MTLSTM`` (eval mode) holding the weights of a local ``wmtlstm-*.pth`` file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"CoVe weight file {path} does not exist; nothing is downloaded: bring your own copy of "
            "wmtlstm-8f474287.pth"
        )
    state = load_weights_only(path, CovePthError, mmap=zipfile.is_zipfile(path))
    state = validate_cove_state_dict(state, str(path))
    encoder = MTLSTM(INPUT_DIM, HIDDEN_DIM, NUM_LAYERS)
    encoder.load_published_state_dict({k: v.float() for k, v in state.items()})
    return encoder.eval()


def load_published_cove(pth_path: PathLike, glove_path: PathLike, vocab: Sequence[str] | None = None) -> CoveLayers:
    """The published MT-LSTM over GloVe rows; ``vocab`` keeps only the rows of those words."""
    encoder = load_cove_pth(pth_path)
    wanted = None if vocab is None else [w.lower() for w in vocab]
    static = load_vectors(glove_path, vocab=wanted, lowercase_lookup=True)
    if static.dim != encoder.input_dim:
        raise ContextualError(
            f"{glove_path} has {static.dim}-d vectors; the CoVe encoder needs {encoder.input_dim}-d GloVe"
        )
    words = [w for w in static.words if w not in SPECIALS]
    rows = torch.from_numpy(static.vectors[[static.index()[w] for w in words]])
    table = torch.cat([torch.zeros(len(SPECIALS), static.dim), rows])
    return CoveLayers(encoder, table, SPECIALS + words)
