"""Training checkpoints without pickle: a checkpoint directory holds

    model/              the biLM + softmax + vocab.txt (our model-directory format, fp32)
    optimizer.safetensors   every tensor of the optimizer state (``state.<param>.<name>``) and the
                            random state of every rank: ``rng.<rank>`` (the CPU generator) and,
                            on CUDA, ``cuda_rng.<rank>`` (the GPU's)
    trainer_state.json  step, stream positions, history, the optimizer's non-tensor state

It is written to ``<dir>.tmp`` and then renamed over ``<dir>``, so a run killed while writing
leaves the previous checkpoint intact.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from ..types import PathLike
from .evaluate import load_language_model
from .lm import BidirectionalLM

STATE_NAME = "trainer_state.json"
OPTIMIZER_NAME = "optimizer.safetensors"


def optimizer_to_flat(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    state = optimizer.state_dict()
    tensors, scalars = {}, {}
    for param, values in state["state"].items():
        for name, value in values.items():
            if isinstance(value, torch.Tensor):
                tensors[f"state.{param}.{name}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{param}.{name}"] = value
    return tensors, {"param_groups": state["param_groups"], "scalars": scalars}


def optimizer_from_flat(tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        if key.startswith("state."):
            _, param, name = key.split(".", 2)
            state.setdefault(int(param), {})[name] = value
    for key, value in meta["scalars"].items():
        param, name = key.split(".", 1)
        state.setdefault(int(param), {})[name] = value
    return {"state": state, "param_groups": meta["param_groups"]}


def save_checkpoint(
    directory: PathLike,
    lm: BidirectionalLM,
    optimizer: torch.optim.Optimizer,
    trainer_state: dict[str, Any],
    random_states: dict[str, list[torch.Tensor]],
) -> Path:
    """``random_states``: per generator ("rng", "cuda_rng"), its state on every rank."""
    directory = Path(directory)
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    lm.save(tmp / "model", info={"step": trainer_state["step"]})
    tensors, meta = optimizer_to_flat(optimizer)
    tensors.update(
        {
            f"{generator}.{rank}": state
            for generator, states in random_states.items()
            for rank, state in enumerate(states)
        }
    )
    save_file(tensors, str(tmp / OPTIMIZER_NAME))
    (tmp / STATE_NAME).write_text(json.dumps({**trainer_state, "optimizer": meta}, indent=1) + "\n", encoding="utf-8")
    old = directory.with_name(directory.name + ".old")
    if directory.exists():
        shutil.rmtree(old, ignore_errors=True)
        directory.rename(old)
    tmp.rename(directory)
    shutil.rmtree(old, ignore_errors=True)
    return directory


def find_checkpoint(directory: PathLike) -> Path:
    """The checkpoint at ``directory`` (or the ``.old`` one a kill during renaming left behind)."""
    directory = Path(directory)
    for candidate in (directory, directory.with_name(directory.name + ".old")):
        if (candidate / STATE_NAME).is_file():
            return candidate
    raise FileNotFoundError(f"no checkpoint in {directory}; run without --resume to start training")


def load_checkpoint(
    directory: PathLike,
) -> tuple[BidirectionalLM, dict[str, Any], dict[str, Any], dict[str, dict[int, torch.Tensor]]]:
    """(the LM with its trained weights, trainer state, optimizer state dict, random states: per
    generator, rank -> state)."""
    directory = find_checkpoint(directory)
    lm, _ = load_language_model(directory / "model")
    state = json.loads((directory / STATE_NAME).read_text(encoding="utf-8"))
    tensors = load_file(str(directory / OPTIMIZER_NAME))
    optimizer = optimizer_from_flat(tensors, state.pop("optimizer"))
    random_states: dict[str, dict[int, torch.Tensor]] = {}
    for key, value in tensors.items():
        if not key.startswith("state."):
            generator, rank = key.rsplit(".", 1)
            random_states.setdefault(generator, {})[int(rank)] = value
    return lm, state, optimizer, random_states
