"""An ELMo biLM saved in our model-directory format (``kind = "elmo-bilm"``).

``model.safetensors`` holds the biLM's state dict and, for models we trained, the language-model
softmax under ``softmax.*`` (with its ``vocab.txt``), so that training can continue from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..models.bilm import BiLM, BiLMConfig
from .budget import build_within_budget
from .model_dir import (
    CONFIG_NAME,
    PathLike,
    load_matching_state,
    load_tensors,
    load_vocab,
    read_model_config,
    save_model_dir,
    weight_files,
)

KIND = "elmo-bilm"
SOFTMAX_PREFIX = "softmax."


def save_bilm(
    bilm: BiLM,
    path: PathLike,
    *,
    softmax: dict[str, torch.Tensor] | None = None,
    vocab: list[str] | None = None,
    dtype: torch.dtype | None = None,
    info: dict[str, Any] | None = None,
) -> Path:
    tensors = dict(bilm.state_dict())
    for name, tensor in (softmax or {}).items():
        tensors[SOFTMAX_PREFIX + name] = tensor
    config = {"bilm": bilm.config.to_dict(), "info": info or {}}
    return save_model_dir(path, KIND, config, tensors, vocab=vocab, dtype=dtype)


def load_bilm(path: PathLike, stateful: bool = False) -> BiLM:
    config = read_model_config(path, KIND)
    bilm = build_within_budget(
        lambda: BiLM(BiLMConfig.from_dict(config["bilm"]), stateful=stateful),
        weight_files(path),
        str(Path(path) / CONFIG_NAME),
    )
    tensors = load_tensors(path)
    state = {k: v for k, v in tensors.items() if not k.startswith(SOFTMAX_PREFIX)}
    load_matching_state(bilm, state, str(path))
    return bilm


def load_softmax(path: PathLike) -> tuple[dict[str, torch.Tensor] | None, list[str] | None]:
    """The saved LM softmax weights and vocabulary, or (None, None) for an encoder-only model."""
    read_model_config(path, KIND)
    tensors = load_tensors(path)
    softmax = {k[len(SOFTMAX_PREFIX) :]: v for k, v in tensors.items() if k.startswith(SOFTMAX_PREFIX)}
    return (softmax or None), load_vocab(path)
