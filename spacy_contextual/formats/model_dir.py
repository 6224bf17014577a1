"""Our own model directory format: ``config.json`` + ``model.safetensors`` (+ ``vocab.txt``).

Weights above ``MAX_SHARD_BYTES`` are split into ``model-00001-of-0000N.safetensors`` shards (whole
tensors, in order), so no single file in a repository or package is large; loading merges them.

No pickle anywhere: tensors go through safetensors, everything else is JSON or text. ``config.json``
holds ``{"kind": ..., "format_version": 1, ...}`` so that a directory of the wrong kind is refused
with a message naming what it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from ..types import PathLike

FORMAT_VERSION = 1
CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
SHARD_PATTERN = "model-*-of-*.safetensors"
MAX_SHARD_BYTES = 15 * 2**19  # 7.5 MiB


def _shards(tensors: dict[str, torch.Tensor], max_bytes: int) -> list[dict[str, torch.Tensor]]:
    """Consecutive groups of whole tensors, each under ``max_bytes`` unless one tensor alone is larger."""
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, tensor in tensors.items():
        nbytes = tensor.numel() * tensor.element_size()
        if shards[-1] and size + nbytes > max_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = tensor
        size += nbytes
    return shards


VOCAB_NAME = "vocab.txt"


def save_model_dir(
    path: PathLike,
    kind: str,
    config: dict[str, Any],
    tensors: dict[str, torch.Tensor],
    vocab: list[str] | None = None,
    dtype: torch.dtype | None = None,
) -> Path:
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    stored = {
        name: (t.detach().to(dtype) if dtype is not None and t.is_floating_point() else t.detach()).contiguous().cpu()
        for name, t in tensors.items()
    }
    for stale in [out / WEIGHTS_NAME, *out.glob(SHARD_PATTERN)]:
        stale.unlink(missing_ok=True)
    shards = _shards(stored, MAX_SHARD_BYTES)
    if len(shards) == 1:
        save_file(shards[0], str(out / WEIGHTS_NAME))
    for number, shard in enumerate(shards if len(shards) > 1 else [], start=1):
        save_file(shard, str(out / f"model-{number:05d}-of-{len(shards):05d}.safetensors"))
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


def weight_files(path: PathLike) -> list[Path]:
    """``model.safetensors``, or the shards in order; empty when there are none."""
    weights = Path(path) / WEIGHTS_NAME
    return [weights] if weights.is_file() else sorted(Path(path).glob(SHARD_PATTERN))


def load_tensors(path: PathLike, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    weights = Path(path) / WEIGHTS_NAME
    files = weight_files(path)
    if not files:
        raise FileNotFoundError(f"{weights} is missing (and there are no {SHARD_PATTERN} shards)")
    expected = int(files[0].name.split("-of-")[1].split(".")[0]) if files[0] != weights else 1
    if len(files) != expected:
        raise FileNotFoundError(
            f"{path} has {len(files)} of its {expected} weight shards ({SHARD_PATTERN}); copy the whole directory"
        )
    tensors: dict[str, torch.Tensor] = {}
    for file in files:
        tensors.update(load_file(str(file)))
    return {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in tensors.items()}


def load_vocab(path: PathLike) -> list[str] | None:
    vocab_path = Path(path) / VOCAB_NAME
    if not vocab_path.is_file():
        return None
    return vocab_path.read_text(encoding="utf-8").rstrip("\n").split("\n")
