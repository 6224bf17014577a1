"""Training checkpoints without pickle: a checkpoint directory holds

    model/              the biLM + softmax + vocab.txt (our model-directory format, fp32)
    optimizer.safetensors   every tensor of the optimizer state (``state.<param>.<name>``) and the
                            random state of every rank: ``rng.<rank>`` (the CPU generator) and,
                            on CUDA, ``cuda_rng.<rank>`` (the GPU's)
    trainer_state.json  step, stream positions, history, the optimizer's non-tensor state

It is written whole through ``<dir>.tmp``, fsynced, and put in place of ``<dir>`` in one step
(``formats/atomic.py``), so a run killed while writing leaves the previous checkpoint intact. A new
run refuses to start over an earlier run's checkpoint (``prepare_checkpoint_dir``) unless told to
``--resume`` it or to ``--overwrite`` it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from ..errors import ContextualError
from ..formats.atomic import atomic_directory, sibling
from ..text_files import read_json
from ..types import PathLike
from .evaluate import load_language_model
from .lm import BidirectionalLM

STATE_NAME = "trainer_state.json"
OPTIMIZER_NAME = "optimizer.safetensors"
DAMAGED_CHECKPOINT = "the checkpoint is damaged; start the run again with --overwrite (without --resume)"


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
    with atomic_directory(directory, may_replace=is_checkpoint) as tmp:
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
        state = json.dumps({**trainer_state, "optimizer": meta}, indent=1)
        (tmp / STATE_NAME).write_text(state + "\n", encoding="utf-8")
    return directory


def is_checkpoint(path: Path) -> bool:
    return (path / STATE_NAME).is_file()


def prepare_checkpoint_dir(directory: PathLike, resume: bool, overwrite: bool) -> None:
    """The start of a run: an earlier run's checkpoint at ``directory`` (or the ``.old`` / ``.tmp`` an
    interrupted write leaves) is continued with ``resume``, deleted with ``overwrite``, else refused."""
    directory = Path(directory)
    if resume and overwrite:
        raise ContextualError("--resume continues the earlier run and --overwrite deletes it: give one of them")
    found = [path for path in (directory, sibling(directory, ".old"), sibling(directory, ".tmp")) if path.exists()]
    if resume or not found:
        return
    if not overwrite:
        raise FileExistsError(
            f"{found[0]} holds a checkpoint of an earlier run: pass --resume to continue that run, or --overwrite "
            "to delete it and train from the start (or choose another output directory)"
        )
    for path in found:
        shutil.rmtree(path)


def find_checkpoint(directory: PathLike) -> Path:
    """The checkpoint at ``directory`` (or the ``.old`` one a kill during renaming left behind)."""
    directory = Path(directory)
    for candidate in (directory, directory.with_name(directory.name + ".old")):
        if (candidate / STATE_NAME).is_file():
            return candidate
    raise FileNotFoundError(
        f"no complete checkpoint in {directory} to resume; start the run again with --overwrite (without --resume)"
    )


def load_checkpoint(
    directory: PathLike,
) -> tuple[BidirectionalLM, dict[str, Any], dict[str, Any], dict[str, dict[int, torch.Tensor]]]:
    """(the LM with its trained weights, trainer state, optimizer state dict, random states: per
    generator, rank -> state)."""
    directory = find_checkpoint(directory)
    lm, _ = load_language_model(directory / "model")
    state = read_json(directory / STATE_NAME, DAMAGED_CHECKPOINT)
    tensors = load_file(str(directory / OPTIMIZER_NAME))
    optimizer = optimizer_from_flat(tensors, state.pop("optimizer"))
    random_states: dict[str, dict[int, torch.Tensor]] = {}
    for key, value in tensors.items():
        if not key.startswith("state."):
            generator, rank = key.rsplit(".", 1)
            random_states.setdefault(generator, {})[int(rank)] = value
    return lm, state, optimizer, random_states
