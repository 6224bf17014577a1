"""Our own model directory format: ``config.json`` + ``model.safetensors`` (+ ``vocab.txt``).

No pickle anywhere: tensors go through safetensors, everything else is JSON or text. ``config.json``
holds ``{"kind": ..., "format_version": 1, ...}`` so that a directory of the wrong kind is refused
with a message naming what it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Union

import torch
from safetensors.torch import load_file, save_file

PathLike = Union[str, Path]
FORMAT_VERSION = 1
CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
VOCAB_NAME = "vocab.txt"


def save_model_dir(
    path: PathLike,
    kind: str,
    config: dict[str, Any],
    tensors: dict[str, torch.Tensor],
    vocab: Optional[list[str]] = None,
    dtype: Optional[torch.dtype] = None,
) -> Path:
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    stored = {
        name: (t.detach().to(dtype) if dtype is not None and t.is_floating_point() else t.detach()).contiguous().cpu()
        for name, t in tensors.items()
    }
    save_file(stored, str(out / WEIGHTS_NAME))
    meta = {"kind": kind, "format_version": FORMAT_VERSION, **config}
    (out / CONFIG_NAME).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    if vocab is not None:
        (out / VOCAB_NAME).write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return out


def read_model_config(path: PathLike, kind: str) -> dict[str, Any]:
    directory = Path(path)
    config_path = directory / CONFIG_NAME
    if not config_path.is_file():
        raise FileNotFoundError(
            f"{directory} is not a spacy-contextual model directory (no {CONFIG_NAME}); "
            "for bilm-tf files pass --options-file and --weight-file instead"
        )
    config = json.loads(config_path.read_text(encoding="utf-8"))
    if config.get("kind") != kind:
        raise ValueError(f"{directory} holds a {config.get('kind')!r} model, not a {kind!r} model")
    if config.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(f"{directory} was written by a newer spacy-contextual (format {config['format_version']})")
    return config


def load_tensors(path: PathLike, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    weights = Path(path) / WEIGHTS_NAME
    if not weights.is_file():
        raise FileNotFoundError(f"{weights} is missing")
    return {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in load_file(str(weights)).items()}


def load_vocab(path: PathLike) -> Optional[list[str]]:
    vocab_path = Path(path) / VOCAB_NAME
    if not vocab_path.is_file():
        return None
    return vocab_path.read_text(encoding="utf-8").rstrip("\n").split("\n")
