"""An ELMo biLM saved in our model-directory format.

``kind = "elmo-bilm"``: bilm-tf's architecture. ``model.safetensors`` holds the biLM's state dict
and, for models we trained, the language-model softmax under ``softmax.*`` (with its ``vocab.txt``),
so that training can continue from it.

``kind = "elmo-manylangs"``: an ELMoForManyLangs model converted from its pickles
(``formats/manylangs.py``): config.json holds the architecture, ``model.safetensors`` the weights in
``ManyLangsBiLM``'s layout, ``word.dic`` / ``char.dic`` the dictionaries as ``key<TAB>id`` lines
(read by the same rules as the original's files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..models.bilm import BiLM, BiLMConfig
from ..models.manylangs_bilm import ManyLangsBiLM, ManyLangsConfig
from ..models.manylangs_ids import CHAR_SPECIALS, WORD_SPECIALS
from .budget import build_within_budget
from .manylangs import CHARS_NAME, WORDS_NAME, check_architecture, read_dictionary
from .model_dir import (
    CONFIG_NAME,
    PathLike,
    load_matching_state,
    load_tensors,
    load_vocab,
    read_config_file,
    read_model_config,
    save_model_dir,
    weight_files,
)

KIND, MANYLANGS_KIND = "elmo-bilm", "elmo-manylangs"
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
    if isinstance(bilm.config, ManyLangsConfig):
        config = {"manylangs": bilm.config.architecture(), "info": info or {}}
        lexicons = {WORDS_NAME: bilm.config.words, CHARS_NAME: bilm.config.chars}
        lines = {
            name: [f"{key}\t{row}" for key, row in entries.items()] for name, entries in lexicons.items() if entries
        }
        return save_model_dir(path, MANYLANGS_KIND, config, tensors, vocab=vocab, dtype=dtype, text_files=lines)
    config = {"bilm": bilm.config.to_dict(), "info": info or {}}
    return save_model_dir(path, KIND, config, tensors, vocab=vocab, dtype=dtype)


def load_bilm(path: PathLike, stateful: bool = False, dtype: torch.dtype = torch.float32) -> BiLM:
    """Either kind; the model's own class (``BiLM`` or ``ManyLangsBiLM``), built uninitialised and given
    the loaded tensors themselves (every parameter is stored), floating-point ones in ``dtype``."""
    stored = read_config_file(path)
    if isinstance(stored, dict) and stored.get("kind") == MANYLANGS_KIND:
        return load_manylangs_bilm(path, stateful, dtype)
    config = read_model_config(path, KIND)
    bilm = build_within_budget(
        lambda: BiLM(BiLMConfig.from_dict(config["bilm"]), stateful=stateful),
        weight_files(path),
        str(Path(path) / CONFIG_NAME),
        initialise=False,
        dtype=dtype,
    )
    tensors = load_tensors(path, dtype)
    state = {k: v for k, v in tensors.items() if not k.startswith(SOFTMAX_PREFIX)}
    load_matching_state(bilm, state, str(path), assign=True)
    return bilm


def load_softmax(path: PathLike) -> tuple[dict[str, torch.Tensor] | None, list[str] | None]:
    """The saved LM softmax weights and vocabulary, or (None, None) for an encoder-only model."""
    read_model_config(path, KIND)
    tensors = load_tensors(path)
    softmax = {k[len(SOFTMAX_PREFIX) :]: v for k, v in tensors.items() if k.startswith(SOFTMAX_PREFIX)}
    return (softmax or None), load_vocab(path)


def load_manylangs_bilm(path: PathLike, stateful: bool = False, dtype: torch.dtype = torch.float32) -> ManyLangsBiLM:
    directory = Path(path)
    architecture = read_model_config(directory, MANYLANGS_KIND)["manylangs"]
    check_architecture(architecture, str(directory / CONFIG_NAME))
    words = read_dictionary(directory / WORDS_NAME, WORD_SPECIALS) if architecture["word_dim"] else None
    chars = read_dictionary(directory / CHARS_NAME, CHAR_SPECIALS) if architecture["char_dim"] else None
    bilm = build_within_budget(
        lambda: ManyLangsBiLM(ManyLangsConfig(**architecture, words=words, chars=chars), stateful=stateful),
        weight_files(directory),
        str(directory / CONFIG_NAME),
        initialise=False,
        dtype=dtype,
    )
    load_matching_state(bilm, load_tensors(directory, dtype), str(directory), assign=True)
    return bilm
