"""Read and write the bilm-tf / AllenNLP ELMo files: ``options.json`` + ``weights.hdf5``.

Layout, as bilm-tf writes it: TF layouts (``x @ W``); ``char_embed`` has no padding row; LSTM
``W_0`` rows are [layer input; previous projected h] and its columns are the gates i, j, f, o; the
+1.0 forget bias is not stored. ``CNN_proj`` exists only if n_filters != P, ``CNN_high_k`` only if
n_highway > 0, ``W_P_0`` only if P < dim. Softmax weights are not part of the format.
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import torch

from ..errors import ContextualError
from ..models.bilm import BiLM, BiLMConfig
from ..models.char_cnn import CharCNN
from ..models.chars import N_CHARACTERS
from ..text_files import read_json
from ..types import PathLike
from .budget import build_within_budget
from .hdf5_contained import check_self_contained
from .model_config import BILM, MAX_WIDTH, validate_section
from .model_dir import all_finite


class WeightFileError(ContextualError):
    """A weight file that cannot be read, or that does not match its options."""


def read_options(options_file: PathLike) -> BiLMConfig:
    path = Path(options_file)
    if not path.is_file():
        raise FileNotFoundError(f"ELMo options file not found: {path}")
    options = read_json(path, "pass the bilm-tf options.json", WeightFileError)
    try:
        config = BiLMConfig.from_options(options)
    except (ValueError, TypeError, AttributeError) as err:
        raise WeightFileError(f"{path}: {err}") from None
    validate_section(config.to_dict(), BILM, str(path))
    return config


def _lstm_prefix(direction: int, layer: int) -> str:
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


def _open_hdf5(path: Path) -> h5py.File:
    if not path.is_file():
        raise FileNotFoundError(f"ELMo weight file not found: {path}")
    try:
        weights = h5py.File(path, "r")
    except OSError as err:
        raise WeightFileError(
            f"{path} is not a readable HDF5 file ({err}); it may be truncated or not a bilm-tf weights.hdf5"
        ) from None
    try:
        check_self_contained(weights, path)
    except BaseException:
        weights.close()
        raise
    return weights


def bilm_tf_shapes(config: BiLMConfig, char_rows: int) -> dict[str, tuple[int, ...]]:
    """Every dataset of a bilm-tf weight file of this architecture: name -> shape (TF layouts)."""
    E, P, D, F = config.char_embedding_dim, config.projection_dim, config.lstm_dim, config.n_filters
    shapes: dict[str, tuple[int, ...]] = {"char_embed": (char_rows, E)}
    for i, (width, num) in enumerate(config.filters):
        shapes[f"CNN/W_cnn_{i}"], shapes[f"CNN/b_cnn_{i}"] = (1, width, E, num), (num,)
    for k in range(config.n_highway):
        for gate in ("carry", "transform"):
            shapes[f"CNN_high_{k}/W_{gate}"], shapes[f"CNN_high_{k}/b_{gate}"] = (F, F), (F,)
    if F != P:
        shapes["CNN_proj/W_proj"], shapes["CNN_proj/b_proj"] = (F, P), (P,)
    for direction in range(2):
        for layer in range(config.n_layers):
            prefix = _lstm_prefix(direction, layer)
            shapes[f"{prefix}/W_0"], shapes[f"{prefix}/B"] = (P + P, 4 * D), (4 * D,)
            if P < D:
                shapes[f"{prefix}/W_P_0"] = (D, P)
    return shapes


def _dataset(weights: h5py.File, name: str, shape: tuple[int, ...], path: Path, scratch: np.ndarray) -> torch.Tensor:
    """One dataset, read once (converted to float32 by HDF5) into the start of ``scratch``, as a tensor
    sharing that memory: valid until the next read. One buffer for every read spares the page faults
    of a fresh allocation per dataset."""
    if name not in weights:
        raise WeightFileError(
            f"{path} has no dataset {name!r}, which the options require; check that options.json belongs "
            "to this weight file"
        )
    stored_shape = weights[name].shape
    if stored_shape != shape:  # before reading: the read allocates what the file declares
        raise WeightFileError(
            f"dataset {name!r} of {path} has shape {stored_shape} but the options imply {shape}; "
            "check that options.json belongs to this weight file"
        )
    array = scratch[: int(np.prod(shape))].reshape(shape)
    try:
        weights[name].read_direct(array)
    except OSError as err:
        raise WeightFileError(f"cannot read dataset {name!r} of {path} ({err}); the file may be truncated") from None
    tensor = torch.from_numpy(array)
    if not all_finite(tensor):
        raise WeightFileError(
            f"dataset {name!r} of {path} holds {int((~torch.isfinite(tensor)).sum()):,} NaN or infinite values "
            f"of {array.size:,}; these weights are unusable (a diverged training run or a damaged file)"
        )
    return tensor


def load_bilm_tf(
    options_file: PathLike, weight_file: PathLike, stateful: bool = False, dtype: torch.dtype = torch.float32
) -> BiLM:
    """Build a :class:`BiLM` from bilm-tf files, validating every dataset's presence and shape; the
    options may only describe a model as large as the weight file justifies (``budget.py``). The
    module is built uninitialised, in ``dtype``: every parameter is filled from the file (each dataset is
    read as float32 and rounded to ``dtype`` as it is copied in)."""
    config = read_options(options_file)
    path = Path(weight_file)
    P = config.projection_dim
    with _open_hdf5(path) as weights, torch.no_grad():
        # Like AllenNLP, the table size comes from the file (261 rows + our zero padding row).
        rows = weights["char_embed"].shape[0] if "char_embed" in weights else N_CHARACTERS - 1
        if not N_CHARACTERS - 1 <= rows < MAX_WIDTH:
            raise WeightFileError(
                f"char_embed of {path} has {rows:,} rows; ELMo character ids need 261 to {MAX_WIDTH - 1:,}"
            )
        config.n_characters = rows + 1
        shapes = bilm_tf_shapes(config, rows)

        def read(name: str) -> torch.Tensor:
            return _dataset(weights, name, shapes[name], path, scratch)

        bilm = build_within_budget(lambda: BiLM(config, stateful=stateful), [path], str(options_file), False, dtype)
        scratch = np.empty(max(int(np.prod(shape)) for shape in shapes.values()), dtype=np.float32)  # within budget
        encoder = bilm.token_encoder
        encoder.char_embedding.weight[0].zero_()
        encoder.char_embedding.weight[1:] = read("char_embed")
        for i, conv in enumerate(encoder.convolutions):
            conv.weight.copy_(read(f"CNN/W_cnn_{i}")[0].permute(2, 1, 0))
            conv.bias.copy_(read(f"CNN/b_cnn_{i}"))
        for k, highway in enumerate(encoder.highways):
            for gate in ("carry", "transform"):
                linear = getattr(highway, gate)
                linear.weight.copy_(read(f"CNN_high_{k}/W_{gate}").T)
                linear.bias.copy_(read(f"CNN_high_{k}/b_{gate}"))
        if encoder.projection is not None:
            encoder.projection.weight.copy_(read("CNN_proj/W_proj").T)
            encoder.projection.bias.copy_(read("CNN_proj/b_proj"))
        for direction, layers in enumerate((bilm.forward_layers, bilm.backward_layers)):
            for index, lstm in enumerate(layers):
                prefix = _lstm_prefix(direction, index)
                kernel = read(f"{prefix}/W_0")
                lstm.input_linearity.weight.copy_(kernel[:P].T)
                lstm.state_linearity.weight.copy_(kernel[P:].T)
                lstm.state_linearity.bias.copy_(read(f"{prefix}/B"))
                if lstm.state_projection is not None:
                    lstm.state_projection.weight.copy_(read(f"{prefix}/W_P_0").T)
        _check_no_unused_datasets(weights, set(shapes), path)
    return bilm


def _check_no_unused_datasets(weights: h5py.File, expected: set[str], path: Path) -> None:
    """By name only: no dataset is read."""
    present: list[str] = []
    weights.visititems(lambda name, obj: present.append(name) if isinstance(obj, h5py.Dataset) else None)
    unused = sorted(set(present) - expected)
    if unused:
        raise WeightFileError(
            f"{path} has datasets the options do not use: {unused[:5]}; options.json does not match this "
            "weight file (compare filters, n_highway, n_layers, projection_dim with the file)"
        )


def bilm_tf_datasets(bilm: BiLM) -> dict[str, np.ndarray]:
    """The biLM's weights as bilm-tf dataset name -> float32 array (TF layouts)."""
    out: dict[str, np.ndarray] = {}

    def arr(t: torch.Tensor) -> np.ndarray:
        return t.detach().to("cpu", torch.float32).numpy()

    encoder = bilm.token_encoder
    out["char_embed"] = arr(encoder.char_embedding.weight[1:])
    for i, conv in enumerate(encoder.convolutions):
        out[f"CNN/W_cnn_{i}"] = arr(conv.weight).transpose(2, 1, 0)[None]
        out[f"CNN/b_cnn_{i}"] = arr(conv.bias)
    for k, highway in enumerate(encoder.highways):
        for gate in ("carry", "transform"):
            out[f"CNN_high_{k}/W_{gate}"] = arr(getattr(highway, gate).weight).T
            out[f"CNN_high_{k}/b_{gate}"] = arr(getattr(highway, gate).bias)
    if encoder.projection is not None:
        out["CNN_proj/W_proj"] = arr(encoder.projection.weight).T
        out["CNN_proj/b_proj"] = arr(encoder.projection.bias)
    for direction, layers in enumerate((bilm.forward_layers, bilm.backward_layers)):
        for index, lstm in enumerate(layers):
            prefix = _lstm_prefix(direction, index)
            out[f"{prefix}/W_0"] = np.concatenate(
                [arr(lstm.input_linearity.weight).T, arr(lstm.state_linearity.weight).T]
            )
            out[f"{prefix}/B"] = arr(lstm.state_linearity.bias)
            if lstm.state_projection is not None:
                out[f"{prefix}/W_P_0"] = arr(lstm.state_projection.weight).T
    return {name: np.ascontiguousarray(value) for name, value in out.items()}


def export_bilm_tf(bilm: BiLM, output_dir: PathLike) -> tuple[Path, Path]:
    """Write ``options.json`` and ``weights.hdf5`` that bilm-tf, AllenNLP and :func:`load_bilm_tf` read."""
    if not isinstance(bilm.token_encoder, CharCNN):
        raise ContextualError(
            "bilm-tf's files have no place for this model's token embedder (an ELMoForManyLangs model: word "
            "embedding and dictionaries); keep it in our model directory (export-elmo --no-bilm-tf)"
        )
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    options_path, weights_path = out / "options.json", out / "weights.hdf5"
    options_path.write_text(json.dumps(bilm.config.to_options(), indent=2) + "\n", encoding="utf-8")
    with h5py.File(weights_path, "w") as weights:
        for name, value in bilm_tf_datasets(bilm).items():
            weights.create_dataset(name, data=value)
    return options_path, weights_path
