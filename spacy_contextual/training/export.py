"""Export a trained biLM: our model directory (optionally fp16, optionally without the softmax) and
bilm-tf ``options.json`` + ``weights.hdf5`` (read by bilm-tf, AllenNLP and ``load_bilm_tf``)."""

from __future__ import annotations

from pathlib import Path

import torch

from ..formats.bilm_dir import load_bilm, save_bilm
from ..formats.bilm_tf import export_bilm_tf
from ..formats.model_dir import CONFIG_NAME, is_model_dir, keep_other_files, weight_files
from ..types import PathLike
from ..writer import atomic_directory
from .evaluate import load_language_model
from .finetune import has_softmax


def find_trained_model(path: PathLike) -> Path:
    """A model directory, or the final model / latest checkpoint inside a training output directory."""
    path = Path(path)
    for candidate in (path, path / "model", path / "checkpoint" / "model"):
        if (candidate / CONFIG_NAME).is_file():
            return candidate
    raise FileNotFoundError(f"{path} holds no biLM: expected {CONFIG_NAME} there, in model/ or in checkpoint/model/")


def export_model(
    model: PathLike,
    output_dir: PathLike,
    dtype: torch.dtype | None = None,
    keep_softmax: bool = True,
    bilm_tf: bool = True,
) -> list[Path]:
    """Write ``output_dir``: config.json + model.safetensors or its shards (+ vocab.txt with the softmax) and, with
    ``bilm_tf``, options.json + weights.hdf5 (always float32; bilm-tf has no softmax)."""
    source = find_trained_model(model)
    out = Path(output_dir)
    with atomic_directory(out, may_replace=is_model_dir) as tmp:  # all of it, or the previous export
        if keep_softmax and has_softmax(source):
            lm, _ = load_language_model(source)
            lm.save(tmp, dtype=dtype)
            bilm = lm.bilm
        else:
            bilm = load_bilm(source)
            save_bilm(bilm, tmp, dtype=dtype)
        keep_other_files(out, tmp)
        if bilm_tf:
            export_bilm_tf(bilm, tmp)
    written = [out / CONFIG_NAME, *weight_files(out)]
    return written + ([out / "options.json", out / "weights.hdf5"] if bilm_tf else [])
