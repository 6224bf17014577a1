"""Pretraining configuration: a JSON file with the sections ``model`` (:class:`BiLMConfig`),
``softmax`` (:class:`SoftmaxConfig`), ``data`` and ``training``, plus command-line overrides
``section.key=value`` (or ``--section.key value``); values are parsed as JSON where they parse.

Every value is checked against its range (``RULES``) when the config is loaded, before any work:
a batch of 2**62 tokens, 0 or negative steps, a NaN learning rate are refused in one line.
``MT_RANGES`` does the same for the numbers of a CoVe MT config (``train-cove``; its keys are read by
``mt.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import ContextualError
from ..formats.model_config import (
    BILM,
    BOOLEAN,
    MAX_LAYERS,
    MAX_VOCAB,
    MAX_WIDTH,
    Rule,
    integer,
    number,
    one_of,
    validate_section,
)
from ..models.bilm import BiLMConfig
from ..schema import OBJECT, TEXT, optional, shown
from ..text_files import loads, read_json
from ..types import PathLike
from ..writer import atomic_file
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
MAX_STEPS, MAX_BATCH_TOKENS, MAX_MINUTES = 2**40, 2**24, 1e9


MINUTES = number(0.0, MAX_MINUTES)
RULES = {
    "model": BILM,
    "softmax": {
        "cutoffs": Rule(
            f"a list of increasing integers in [1, {MAX_VOCAB:_}]",
            lambda v: (
                isinstance(v, list)
                and all(integer(1, MAX_VOCAB).test(c) for c in v)
                and all(a < b for a, b in zip(v, v[1:], strict=False))
            ),
        ),
        "div_value": number(1.0, 1e3),
        "kind": one_of("adaptive", "sampled"),
        "negatives": integer(1, MAX_VOCAB),
    },
    "data": {
        "train": Rule("a list of file names", lambda v: isinstance(v, list) and all(isinstance(f, str) for f in v)),
        "valid": optional(TEXT),
        "vocab": optional(TEXT),
        "min_count": integer(1, 2**31),
        "batch_tokens": integer(1, MAX_BATCH_TOKENS),
        "batching": one_of("sentences", "windows"),
        "bptt_steps": integer(1, 2**16),
        "chunk_sentences": integer(1, 2**24),
        "valid_sentences": integer(1, 2**31),
    },
    "training": {
        "output_dir": TEXT,
        "seed": integer(0, 2**63 - 1),
        "optimizer": one_of("adam", "adagrad"),
        "lr": number(0.0, 1e3),
        "warmup_steps": integer(0, MAX_STEPS),
        "max_steps": integer(1, MAX_STEPS),
        "max_minutes": optional(MINUTES),
        "lr_decay_steps": optional(integer(1, MAX_STEPS)),
        "lr_min": number(0.0, 1e3),
        "dropout": number(0.0, 0.99),
        "grad_clip": number(0.0, 1e9),
        "checkpoint_minutes": MINUTES,
        "validate_minutes": MINUTES,
        "export_dir": optional(TEXT),
        "export_dtype": one_of("float16", "bfloat16", "float32"),
        "device": TEXT,
        "mixed_precision": BOOLEAN,
        "num_threads": optional(integer(1, 4096)),
    },
}


MT_RANGES = {
    "vocab": {
        "input_std": number(0.0, 1e3),
        "source_min_count": integer(1, 2**31),
        "target_min_count": integer(1, 2**31),
        "target_bpe_size": integer(1, MAX_VOCAB),
    },
    "model": {
        "target_embedding_dim": integer(1, MAX_WIDTH),
        "decoder_hidden": integer(1, MAX_WIDTH),
        "decoder_layers": integer(1, MAX_LAYERS),
        "dropout": number(0.0, 0.99),
    },
    "training": {
        "seed": integer(0, 2**63 - 1),
        "threads": integer(1, 4096),
        "learning_rate": number(0.0, 1e3),
        "adam_decay": number(0.0, 1.0),
        "batch_size": integer(1, 2**20),
        "grad_clip": number(0.0, 1e9),
        "max_epochs": integer(1, 2**31),
        "max_steps": integer(0, MAX_STEPS),
        "max_train_pairs": integer(0, 2**40),
        "eval_every_steps": integer(0, MAX_STEPS),
        "checkpoint_every_steps": integer(0, MAX_STEPS),
    },
}


def check_ranges(config: dict[str, Any], ranges: dict[str, dict[str, Rule]], source: str) -> None:
    """Every value of ``config`` that ``ranges`` names is in its range (missing keys are the reader's)."""
    for section, rules in ranges.items():
        values = config.get(section) or {}
        for key, rule in rules.items():
            if key in values and not rule.test(values[key]):
                raise ContextualError(f"{source}: {section}.{key} is {shown(values[key])}; expected {rule.expects}")


@dataclass
class PretrainConfig:
    model: BiLMConfig = field(default_factory=BiLMConfig)
    softmax: SoftmaxConfig = field(default_factory=SoftmaxConfig)
    data: DataConfig = field(default_factory=DataConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)

    def to_dict(self) -> dict[str, Any]:
        return {name: asdict(getattr(self, name)) for name in SECTIONS}

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "the config") -> PretrainConfig:
        """The config of ``data`` (the sections, defaults filled in), every value checked (``RULES``)."""
        sections = sections_from_dict(data, SECTIONS, source)
        for name, section in sections.items():
            validate_section(asdict(section), RULES[name], source, f"{name}.")
        return cls(**sections)

    @classmethod
    def load(cls, path: PathLike, overrides: Sequence[str] = ()) -> PretrainConfig:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {path}")
        data = read_json(path, "fix the file or give another config")
        check_sections(data, SECTIONS, str(path))
        return cls.from_dict(apply_overrides(data, overrides), str(path))

    def save(self, path: PathLike) -> None:
        with atomic_file(path) as tmp:
            tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")


def check_keys(section: str, values: dict[str, Any], known: set[str]) -> None:
    bad = set(values) - known
    if bad:
        raise ContextualError(f"unknown keys in [{section}]: {sorted(bad)}; known: {sorted(known)}")


def check_sections(data: Any, sections: dict[str, type], source: str = "the config", error=ContextualError) -> None:
    """``data`` is a JSON object, and each of its ``sections`` in it is an object (one line naming the
    section otherwise)."""
    if not isinstance(data, dict):
        raise error(f"{source} is {shown(data)}; expected a JSON object with the sections {list(sections)}")
    validate_section(data, dict.fromkeys(sections, OBJECT), source, other_keys=True, required=(), error=error)


def sections_from_dict(data: dict[str, Any], sections: dict[str, type], source: str = "the config") -> dict[str, Any]:
    """Each section of ``data`` as its dataclass in ``sections``; unknown sections or keys are refused."""
    check_sections(data, sections, source)
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
            value = loads(raw)
        except json.JSONDecodeError:
            value = raw
        data.setdefault(section, {})[name] = value
    return data
