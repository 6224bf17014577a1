"""Pretraining configuration: a JSON file with the sections ``model`` (:class:`BiLMConfig`),
``softmax`` (:class:`SoftmaxConfig`), ``data`` and ``training``, plus command-line overrides
``section.key=value`` (or ``--section.key value``); values are parsed as JSON where they parse.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import ContextualError
from ..models.bilm import BiLMConfig
from ..text_files import read_json
from ..types import PathLike
from .lm import SoftmaxConfig


@dataclass
class DataConfig:
    train: list = field(default_factory=list)  # files, one tokenised sentence per line (.gz ok)
    valid: str | None = None
    vocab: str | None = None  # vocab.txt; built from ``train`` when missing
    min_count: int = 3
    batch_tokens: int = 2000  # tokens per batch and process, <S>/</S> and padding included
    batching: str = "sentences"  # sentences (zero state per sentence) | windows (truncated BPTT, state carried)
    bptt_steps: int = 20  # window length for batching = "windows" (rows = batch_tokens // bptt_steps)
    chunk_sentences: int = 10000
    valid_sentences: int = 2000  # periodic validation uses the first N sentences of ``valid``


@dataclass
class TrainingConfig:
    output_dir: str = "training_runs/elmo"
    seed: int = 0
    optimizer: str = "adam"  # adam | adagrad (bilm-tf)
    lr: float = 0.002
    warmup_steps: int = 200
    max_steps: int = 100000
    max_minutes: float | None = None  # stop (with a final checkpoint) after this wall time
    lr_decay_steps: int | None = None  # linear decay to lr_min at this step (default max_steps)
    lr_min: float = 0.0
    dropout: float = 0.1
    grad_clip: float = 1.0
    checkpoint_minutes: float = 5.0
    validate_minutes: float = 10.0
    export_dir: str | None = None  # also write the fp16 biLM here whenever validation improves
    export_dtype: str = "float16"
    device: str = "auto"  # auto | cpu | cuda | cuda:N (under torchrun: cuda or auto, the GPU of LOCAL_RANK)
    mixed_precision: bool = False  # bf16 autocast of the biLM's forward pass; softmax, loss and weights in float32
    num_threads: int | None = 1


SECTIONS = {"model": BiLMConfig, "softmax": SoftmaxConfig, "data": DataConfig, "training": TrainingConfig}


@dataclass
class PretrainConfig:
    model: BiLMConfig = field(default_factory=BiLMConfig)
    softmax: SoftmaxConfig = field(default_factory=SoftmaxConfig)
    data: DataConfig = field(default_factory=DataConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)

    def to_dict(self) -> dict[str, Any]:
        return {name: asdict(getattr(self, name)) for name in SECTIONS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PretrainConfig:
        return cls(**sections_from_dict(data, SECTIONS))

    @classmethod
    def load(cls, path: PathLike, overrides: Sequence[str] = ()) -> PretrainConfig:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {path}")
        data = read_json(path, "fix the file or give another config")
        return cls.from_dict(apply_overrides(data, overrides))

    def save(self, path: PathLike) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")


def check_keys(section: str, values: dict[str, Any], known: set[str]) -> None:
    bad = set(values) - known
    if bad:
        raise ContextualError(f"unknown keys in [{section}]: {sorted(bad)}; known: {sorted(known)}")


def sections_from_dict(data: dict[str, Any], sections: dict[str, type]) -> dict[str, Any]:
    """Each section of ``data`` as its dataclass in ``sections``; unknown sections or keys are refused."""
    unknown = set(data) - set(sections)
    if unknown:
        raise ContextualError(f"unknown config sections {sorted(unknown)}; expected {list(sections)}")
    built = {}
    for name, kind in sections.items():
        values = data.get(name, {})
        check_keys(name, values, {f.name for f in fields(kind)})
        try:
            built[name] = kind(**values)
        except TypeError as error:  # a required key is missing
            raise ContextualError(f"[{name}]: {error}") from None
    return built


def parse_overrides(args: Sequence[str]) -> list[str]:
    """``["--training.lr", "0.1", "data.batch_tokens=500"]`` -> ``["training.lr=0.1", "data.batch_tokens=500"]``."""
    out, i = [], 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--"):
            if "=" in arg:
                out.append(arg[2:])
            elif i + 1 < len(args):
                out.append(f"{arg[2:]}={args[i + 1]}")
                i += 1
            else:
                raise ContextualError(f"override {arg} has no value; write {arg} VALUE or {arg[2:]}=VALUE")
        elif "=" in arg:
            out.append(arg)
        else:
            raise ContextualError(f"cannot read the override {arg!r}; write section.key=value, e.g. training.lr=0.1")
        i += 1
    return out


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    data = json.loads(json.dumps(data))
    for override in overrides:
        key, _, raw = override.partition("=")
        section, _, name = key.partition(".")
        if section not in SECTIONS or not name:
            raise ContextualError(
                f"override {override!r}: the key must be section.name with section one of {list(SECTIONS)}"
            )
        if name not in {f.name for f in fields(SECTIONS[section])}:
            raise ContextualError(f"override {override!r}: [{section}] has no key {name!r}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        data.setdefault(section, {})[name] = value
    return data
