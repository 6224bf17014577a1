"""Our own model directory format: ``config.json`` + ``model.safetensors`` (+ ``vocab.txt``) +
``manifest.json``.

Weights above ``MAX_SHARD_BYTES`` are split into ``model-00001-of-0000N.safetensors`` shards (whole
tensors, in order), so no single file in a repository or package is large; loading merges them.

No pickle anywhere: tensors go through safetensors, everything else is JSON or text. ``config.json``
holds ``{"kind": ..., "format_version": 1, ...}`` and is checked against its kind's schema
(``model_config.py``); ``manifest.json`` holds the SHA-256 of every other file (``manifest.py``),
checked before anything is used. Weights holding NaN or infinity are refused. A directory is written
whole through a temporary one (``atomic.py``): a kill leaves the previous version or the new one.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..errors import ContextualError, ModelDirError
from ..text_files import read_json
from ..types import PathLike
from ..writer import atomic_directory, interrupted_versions
from .manifest import MANIFEST_NAME, verify_manifest, write_manifest
from .model_config import FORMAT_VERSIONS, SCHEMAS, validate_config

FORMAT_VERSION = FORMAT_VERSIONS[-1]
CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
SHARD_PATTERN = "model-*-of-*.safetensors"
MAX_SHARD_BYTES = 15 * 2**19  # 7.5 MiB
VOCAB_NAME, TARGET_VOCAB_NAME = "vocab.txt", "target_vocab.txt"
WORD_LISTS = (VOCAB_NAME, TARGET_VOCAB_NAME, "word.dic", "char.dic")  # the .dic files: kind elmo-manylangs
ALIGNMENT = 64  # bytes: torch's CPU allocator aligns every tensor so (c10's gAlignment)


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


def is_model_dir(path: Path) -> bool:
    """A directory spacy-contextual wrote (so saving over it may replace it): a manifest, or a config.json
    naming its kind (another project's config.json, e.g. an ELMoForManyLangs model's, is not ours)."""
    if (path / MANIFEST_NAME).is_file():
        return True
    try:
        config = read_json(path / CONFIG_NAME, "not a model directory of ours")
    except (OSError, ContextualError):
        return False
    return isinstance(config, dict) and "kind" in config


def save_model_dir(
    path: PathLike,
    kind: str,
    config: dict[str, Any],
    tensors: dict[str, torch.Tensor],
    vocab: list[str] | None = None,
    dtype: torch.dtype | None = None,
    text_files: dict[str, list[str]] | None = None,
) -> Path:
    """Write (or replace) the model directory ``path``; ``text_files``: other word lists, one a line.
    Files of an existing directory that are not model files (notes, a training config) are kept."""
    stored = {
        name: (t.detach().to(dtype) if dtype is not None and t.is_floating_point() else t.detach()).contiguous().cpu()
        for name, t in tensors.items()
    }
    lines = {**({VOCAB_NAME: vocab} if vocab is not None else {}), **(text_files or {})}
    with atomic_directory(path, may_replace=is_model_dir) as out:
        keep_other_files(Path(path), out)
        shards = _shards(stored, MAX_SHARD_BYTES)
        names = [WEIGHTS_NAME] if len(shards) == 1 else [model_shard_name(i, len(shards)) for i in range(len(shards))]
        for name, shard in zip(names, shards, strict=True):
            save_file(shard, str(out / name))
        meta = {"kind": kind, "format_version": FORMAT_VERSION, **config}
        (out / CONFIG_NAME).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        for name, words in lines.items():
            (out / name).write_text("\n".join(words) + "\n", encoding="utf-8")
        write_manifest(out, [CONFIG_NAME, *names, *lines])
    return Path(path)


def keep_other_files(existing: Path, out: Path) -> None:
    """Carry what ``existing`` holds besides model files (notes, a training config) into ``out``: files as
    hard links (no bytes copied), symlinks as symlinks (never the whole folder a link points to)."""
    if not existing.is_dir():
        return
    managed = {CONFIG_NAME, MANIFEST_NAME, *WORD_LISTS}
    for entry in existing.iterdir():
        if entry.name in managed or entry.match(SHARD_PATTERN) or entry.name == WEIGHTS_NAME:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, out / entry.name, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry, out / entry.name)


def _link_or_copy(source: PathLike, target: PathLike) -> None:
    if os.path.islink(source):
        os.symlink(os.readlink(source), target)
        return
    try:
        os.link(source, target)
    except OSError:  # a filesystem without hard links
        shutil.copy2(source, target)


def model_shard_name(index: int, count: int) -> str:
    return f"model-{index + 1:05d}-of-{count:05d}.safetensors"


def model_files(path: PathLike) -> list[str]:
    """The files of a model directory its loaders read: config, weights, word lists."""
    directory = Path(path)
    lists = [name for name in WORD_LISTS if (directory / name).is_file()]
    return [CONFIG_NAME, *(f.name for f in weight_files(directory)), *lists]


def read_config_file(path: PathLike) -> dict[str, Any]:
    """The parsed config.json of a model directory, whatever its kind (not yet checked)."""
    directory = Path(path)
    config_path = directory / CONFIG_NAME
    if not config_path.is_file():
        interrupted = [p for p in interrupted_versions(directory) if p.is_dir()]
        if interrupted and not directory.exists():
            raise ModelDirError(
                f"{directory} is missing but {interrupted[0]} is there: a save was interrupted; rename "
                f"{interrupted[0].name} to {directory.name} (-old is the previous version, -new the new one)"
            )
        raise FileNotFoundError(
            f"{directory} is not a spacy-contextual model directory (no {CONFIG_NAME}); "
            "for bilm-tf files pass --options-file and --weight-file instead"
        )
    return read_json(config_path, "the file is damaged; copy the model directory again", ModelDirError)


def read_model_config(path: PathLike, kind: str) -> dict[str, Any]:
    """config.json of a ``kind`` model directory, checked against the schema and, with every other
    file, against the manifest."""
    directory = Path(path)
    config = validate_config(read_config_file(directory), kind, str(directory / CONFIG_NAME))
    verify_manifest(directory, model_files(directory))
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
        try:
            loaded = load_file(str(file))
        except SafetensorError as error:
            raise ModelDirError(f"{file} is not a readable safetensors file ({error}); the file is damaged") from None
        check_finite(loaded, str(file))
        tensors.update(loaded)
    return {k: aligned(v.to(dtype) if v.is_floating_point() else v) for k, v in tensors.items()}


def aligned(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` at an address that is a multiple of ``ALIGNMENT`` bytes, as torch allocates every tensor:
    a safetensors file puts its tensors 8 bytes apart, and a matrix kernel may round differently (and run
    slower) on a weight that starts mid-cache-line, so a loaded model would not compute the same bits as
    the same model in memory. A tensor that is not aligned is copied."""
    return tensor if tensor.data_ptr() % ALIGNMENT == 0 else tensor.clone()


def all_finite(tensor: torch.Tensor) -> bool:
    """No NaN or infinity in a floating-point tensor, in one pass without a copy: its minimum and maximum
    (which NaN propagates to) are finite."""
    if not tensor.numel():
        return True
    low, high = torch.aminmax(tensor)
    return bool(torch.isfinite(low) & torch.isfinite(high))


def check_finite(tensors: dict[str, torch.Tensor], source: str) -> None:
    """Refuse weights holding NaN or infinity (a diverged run, a damaged file), naming the tensor."""
    for name, tensor in tensors.items():
        if tensor.is_floating_point() and not all_finite(tensor):
            bad = int((~torch.isfinite(tensor)).sum())
            raise ModelDirError(
                f"{source}: {name} holds {bad:,} NaN or infinite values of {tensor.numel():,}; these weights are "
                "unusable (a diverged training run or a damaged file)"
            )


def load_vocab(path: PathLike, name: str = VOCAB_NAME) -> list[str] | None:
    vocab_path = Path(path) / name
    if not vocab_path.is_file():
        return None
    return vocab_path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def load_matching_state(
    module: torch.nn.Module,
    state: dict[str, torch.Tensor],
    source: str,
    not_stored: frozenset[str] = frozenset(),
    assign: bool = False,
) -> None:
    """``module.load_state_dict(state)`` once every name and shape is known to match (``not_stored``:
    entries the module has that are deliberately not saved, e.g. tied weights). ``assign``: the module
    takes ``state``'s tensors themselves (no copy), which must then have its dtypes."""
    check_state({k: tuple(v.shape) for k, v in module.state_dict().items() if k not in not_stored}, state, source)
    module.load_state_dict(state, strict=False, assign=assign)


def check_state(expected: dict[str, tuple[int, ...]], state: dict[str, torch.Tensor], source: str) -> None:
    """The stored tensors are exactly those named in ``expected``, with those shapes."""
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unexpected:
        raise ModelDirError(
            f"{source}: the weights do not match config.json (missing {missing[:5]}, unexpected {unexpected[:5]}); "
            "the directory is damaged or its config.json belongs to another model"
        )
    for name, shape in expected.items():
        if tuple(state[name].shape) != shape:
            raise ModelDirError(
                f"{source}: {name} has shape {tuple(state[name].shape)} but config.json implies {shape}; "
                "the directory is damaged or its config.json belongs to another model"
            )


def write_model_manifest(path: PathLike) -> Path:
    """Record the digests of an existing model directory's files (one saved before manifests existed,
    or assembled by hand) after checking its config.json; later loads then verify them."""
    directory = Path(path)
    config = read_config_file(directory)
    kind = config.get("kind") if isinstance(config, dict) else None
    if kind not in SCHEMAS:
        raise ModelDirError(f"{directory / CONFIG_NAME} names the kind {kind!r}; expected one of {sorted(SCHEMAS)}")
    validate_config(config, kind, str(directory / CONFIG_NAME))
    if not weight_files(directory):
        raise FileNotFoundError(f"{directory / WEIGHTS_NAME} is missing (and there are no {SHARD_PATTERN} shards)")
    return write_manifest(directory, model_files(directory))
