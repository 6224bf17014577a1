"""Training checkpoints without pickle: a checkpoint directory holds

    model/              the biLM + softmax + vocab.txt (our model-directory format, fp32)
    optimizer.safetensors   every tensor of the optimizer state (``state.<param>.<name>``) and the
                            random state of every rank: ``rng.<rank>`` (the CPU generator) and,
                            on CUDA, ``cuda_rng.<rank>`` (the GPU's)
    trainer_state.json  step, stream positions, history, the optimizer's non-tensor state

It is written whole through the writer's working folder, fsynced, and put in place of ``<dir>`` in one step
(``writer.py``), so a run killed while writing leaves the previous checkpoint intact. A new
run refuses to start over an earlier run's checkpoint (``prepare_checkpoint_dir``) unless told to
``--resume`` it or to ``--overwrite`` it. ``--resume`` refuses a damaged, truncated or NaN checkpoint
in one line naming the file (the model directory is checked against its manifest; the state and the
optimizer tensors are parsed and checked for NaN / infinity) before any training step.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..errors import ContextualError
from ..formats.model_dir import check_finite, load_vocab
from ..text_files import read_json
from ..types import PathLike
from ..writer import atomic_directory, interrupted_versions
from .config import check_sections
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
    """The start of a run: an earlier run's checkpoint at ``directory`` (or a version an interrupted write
    left beside it) is continued with ``resume``, deleted with ``overwrite``, else refused."""
    directory = Path(directory)
    if resume and overwrite:
        raise ContextualError("--resume continues the earlier run and --overwrite deletes it: give one of them")
    found = [path for path in (directory, *interrupted_versions(directory)) if path.exists()]
    if resume or not found:
        return
    if not overwrite:
        raise FileExistsError(
            f"{found[0]} holds a checkpoint of an earlier run: pass --resume to continue that run, or --overwrite "
            "to delete it and train from the start (or choose another output directory)"
        )
    for path in found:
        shutil.rmtree(path)


def has_checkpoint(directory: PathLike) -> bool:
    """A checkpoint that ``--resume`` can continue is at ``directory`` (or an interrupted write's version)."""
    return any(is_checkpoint(candidate) for candidate in (Path(directory), *interrupted_versions(directory, ("old",))))


def find_checkpoint(directory: PathLike) -> Path:
    """The checkpoint at ``directory`` (or the previous one a kill during renaming left beside it)."""
    directory = Path(directory)
    for candidate in (directory, *interrupted_versions(directory, ("old",))):
        if is_checkpoint(candidate):
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
    state = read_trainer_state(directory / STATE_NAME)
    tensors = read_optimizer_tensors(directory / OPTIMIZER_NAME)
    optimizer = optimizer_from_flat(tensors, state.pop("optimizer"))
    random_states: dict[str, dict[int, torch.Tensor]] = {}
    for key, value in tensors.items():
        if not key.startswith("state."):
            generator, rank = key.rsplit(".", 1)
            random_states.setdefault(generator, {})[int(rank)] = value
    return lm, state, optimizer, random_states


class CheckpointError(ContextualError):
    """A checkpoint that cannot be resumed: damaged, truncated, or holding NaN."""


def damaged(path: Path, problem: str) -> CheckpointError:
    return CheckpointError(
        f"{path} is damaged ({problem}); the checkpoint cannot be resumed: start the run again with --overwrite "
        "(or restore the checkpoint directory from a copy)"
    )


def read_json_object(path: Path) -> dict[str, Any]:
    """A checkpoint's JSON file (trainer_state.json, optimizer.json): an object with an integer ``step``
    where it is the trainer state."""
    if not path.is_file():
        raise damaged(path, "missing")
    state = read_json(path, DAMAGED_CHECKPOINT, CheckpointError)
    if not isinstance(state, dict) or (path.name == STATE_NAME and not isinstance(state.get("step"), int)):
        raise damaged(path, "expected a JSON object" + (" with an integer 'step'" if path.name == STATE_NAME else ""))
    return state


def read_trainer_state(path: Path) -> dict[str, Any]:
    """trainer_state.json of a biLM run: its step and the optimizer's non-tensor state."""
    state = read_json_object(path)
    optimizer = state.get("optimizer")
    if not (
        isinstance(optimizer, dict)
        and isinstance(optimizer.get("param_groups"), list)
        and isinstance(optimizer.get("scalars"), dict)
    ):
        raise damaged(path, "expected the optimizer state under 'optimizer'")
    return state


def read_optimizer_tensors(path: Path) -> dict[str, torch.Tensor]:
    """optimizer.safetensors, every tensor finite."""
    try:
        tensors = load_file(str(path))
    except (SafetensorError, FileNotFoundError) as error:
        raise damaged(path, f"not a readable safetensors file: {error}") from None
    check_finite(tensors, str(path))
    return tensors


SAME_RUN_SETTINGS = (("model", None), ("softmax", None), ("training", "optimizer"), ("data", "batching"))


def check_same_run(directory: PathLike, config: dict[str, Any], vocabulary: list[str] | None) -> None:
    """``--resume`` continues the run the checkpoint holds, or nothing: the model, the softmax, the
    optimizer and the batching must be the checkpoint's, and the vocabulary the same words in the same
    order (rows of the softmax and the embedding are read by position). Checked before anything is written."""
    directory = find_checkpoint(directory)
    recorded = read_json_object(directory / STATE_NAME).get("config")
    if not isinstance(recorded, dict):
        raise damaged(directory / STATE_NAME, "it does not record the run's config")
    try:
        check_sections(recorded, dict.fromkeys(name for name, _ in SAME_RUN_SETTINGS), "its config")
    except ContextualError as error:
        raise damaged(directory / STATE_NAME, str(error)) from None
    fix = "resume with the run's own config and vocabulary, or start again with --overwrite"
    for section, key in SAME_RUN_SETTINGS:
        before, now = recorded.get(section, {}), config.get(section, {})
        if key is not None:
            before, now = before.get(key), now.get(key)
        if before != now:
            name = f"{section}.{key}" if key else section
            given = f"its {name} is {_short(before)} but the config now gives {_short(now)}"
            raise ContextualError(f"cannot resume {directory}: {given}; {fix}")
    trained = load_vocab(directory / "model")
    if vocabulary is None or trained != vocabulary:
        what = "is missing" if vocabulary is None else _first_difference(trained or [], vocabulary)
        raise ContextualError(f"cannot resume {directory}: the vocabulary it was trained with {what}; {fix}")


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:79] + "…"


def _first_difference(trained: list[str], now: list[str]) -> str:
    if len(trained) != len(now):
        return f"has {len(trained):,} words and the one given now {len(now):,}"
    index = next(i for i, (a, b) in enumerate(zip(trained, now, strict=True)) if a != b)
    return f"has {trained[index]!r} at row {index:,} where the one given now has {now[index]!r}"


def check_checkpoint_files(directory: PathLike) -> Path:
    """Before a resume: the checkpoint's JSON files parse and its optimizer tensors are readable and finite
    (its model directory is checked by the model loader, against its manifest). Returns the checkpoint."""
    directory = find_checkpoint(directory)
    for path in sorted(directory.glob("*.json")):
        read_json_object(path)
    read_optimizer_tensors(directory / OPTIMIZER_NAME)
    return directory
