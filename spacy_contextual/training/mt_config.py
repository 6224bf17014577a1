"""The CoVe MT training configuration: a confection ``.cfg`` (``spacy_contextual/assets/cove/mt.cfg``)
with the sections ``paths``, ``vocab``, ``model`` (the :class:`Seq2SeqConfig` settings other than the
vocabulary sizes) and ``training``, checked when it is read: unknown sections or keys and values out
of their choices are refused, naming the key."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..errors import ContextualError
from ..models.seq2seq import Seq2SeqConfig
from .config import check_keys, sections_from_dict

OOV_CHOICES = ("zero", "random")
TARGET_UNITS = ("words", "bpe")
OPTIMIZERS = ("adam", "sgd")
MODEL_KEYS = {f.name for f in fields(Seq2SeqConfig)} - {
    "source_vocab_size",
    "target_vocab_size",
    "pad_id",
    "bos_id",
    "eos_id",
}


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ContextualError(f"{name} must be {' or '.join(repr(c) for c in choices)}, got {value!r}")


@dataclass
class MTPaths:
    glove: str  # GloVe (or any word2vec-style) text file for the English source
    train_source: str
    train_target: str
    val_source: str
    val_target: str
    data: str | None = None  # the folder the shipped config interpolates the four corpus files from


@dataclass
class MTVocabConfig:
    oov: str = "zero"  # zero: source words without GloVe are <unk>; random: fixed uniform(+-0.1) rows
    input_std: float = 0.0  # rescale the GloVe rows to this per-dimension std; 0 keeps them
    source_min_count: int = 1
    target: str = "words"  # words (count >= target_min_count) | bpe (target_bpe_size pieces)
    target_min_count: int = 2
    target_bpe_size: int = 8000

    def __post_init__(self):
        check_choice("vocab.oov", self.oov, OOV_CHOICES)
        check_choice("vocab.target", self.target, TARGET_UNITS)


@dataclass
class MTTrainingConfig:
    seed: int = 0
    threads: int = 1
    optimizer: str = "adam"  # adam (lr times adam_decay on each rise of validation perplexity) | sgd (the paper)
    learning_rate: float = 0.002
    adam_decay: float = 0.5
    batch_size: int = 64
    grad_clip: float = 5.0
    max_epochs: int = 30
    max_steps: int = 0  # 0: no limit
    max_train_pairs: int = 0  # 0: every training pair
    eval_every_steps: int = 0  # validation perplexity every N steps besides every epoch; 0: per epoch only
    checkpoint_every_steps: int = 0  # a checkpoint every N steps besides every epoch

    def __post_init__(self):
        check_choice("training.optimizer", self.optimizer, OPTIMIZERS)


SECTIONS = {"paths": MTPaths, "vocab": MTVocabConfig, "training": MTTrainingConfig}


@dataclass
class MTConfig:
    paths: MTPaths
    vocab: MTVocabConfig = field(default_factory=MTVocabConfig)
    model: dict[str, Any] = field(default_factory=dict)
    training: MTTrainingConfig = field(default_factory=MTTrainingConfig)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MTConfig:
        model = dict(data.get("model", {}))
        check_keys("model", model, MODEL_KEYS)
        sections = sections_from_dict({name: values for name, values in data.items() if name != "model"}, SECTIONS)
        return cls(model=model, **sections)

    def to_dict(self) -> dict[str, Any]:
        sections = {"paths": self.paths, "vocab": self.vocab, "training": self.training}
        return {**{name: asdict(section) for name, section in sections.items()}, "model": dict(self.model)}
