"""Which format a model directory is in, told by its files, and the loader of each: ``load_elmo`` and
``load_cove``, the one dispatch of each encoder.

    "ours"       config.json with "format_version" (+ model.safetensors)      model_dir.py, bilm_dir.py
    "manylangs"  config.json with "config_path", encoder.pkl, token_embedder.pkl, char.dic / word.dic
                 (an unpacked ELMoForManyLangs archive)                       manylangs.py
    "bilm-tf"    options.json + weights.hdf5 (or one *options.json + one *weights.hdf5)   bilm_tf.py
    "cove-pth"   one *.pth (the salesforce MT-LSTM) + one GloVe text file (*.txt, *.txt.gz)   cove_pth.py

A config.json without our "kind" beside an encoder.pkl counts as ELMoForManyLangs', any other as
ours, so that the reader of the likelier format names what is wrong with it.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..errors import ContextualError, ModelDirError
from ..models.bilm import BiLM
from ..models.cove_layers import CoveLayers
from ..text_files import read_json
from ..types import PathLike
from .bilm_dir import load_bilm
from .bilm_tf import load_bilm_tf
from .cove_dir import load_cove_layers
from .cove_pth import load_published_cove
from .manylangs import CONFIG_NAME, ENCODER_NAME, load_manylangs

OURS, MANYLANGS, BILM_TF, COVE_PTH = "ours", "manylangs", "bilm-tf", "cove-pth"
GLOVE_PATTERNS = ("*.txt", "*.txt.gz")


def detect_format(path: PathLike) -> str:
    """One of OURS, MANYLANGS, BILM_TF, COVE_PTH; a directory in none of them is refused."""
    found = format_of(path)
    if found is None:
        raise ModelDirError(
            f"{path} holds no model this package reads: expected config.json (our model directory or an "
            "ELMoForManyLangs model), options.json + weights.hdf5 (bilm-tf), or a CoVe *.pth with a GloVe *.txt"
        )
    return found


def format_of(path: PathLike) -> str | None:
    """``detect_format``, or None for a directory in none of the formats."""
    directory = Path(path)
    config = directory / CONFIG_NAME
    if config.is_file():
        try:
            data = read_json(config, "its reader names what is wrong")
        except ContextualError:
            return OURS
        ours = isinstance(data, dict) and ("kind" in data or "format_version" in data)
        theirs = (isinstance(data, dict) and "config_path" in data) or (directory / ENCODER_NAME).is_file()
        return MANYLANGS if theirs and not ours else OURS
    if _matches(directory, ("*options.json",)) and _matches(directory, ("*weights.hdf5",)):
        return BILM_TF
    if _matches(directory, ("*.pth",)) and _matches(directory, GLOVE_PATTERNS):
        return COVE_PTH
    return None


def bilm_tf_files(path: PathLike) -> tuple[Path, Path]:
    """(options file, weight file) of a bilm-tf directory."""
    directory = Path(path)
    return _one(directory, ("options.json", "*options.json")), _one(directory, ("weights.hdf5", "*weights.hdf5"))


def cove_pth_files(path: PathLike) -> tuple[Path, Path]:
    """(the MT-LSTM .pth, the GloVe file) of a salesforce CoVe directory."""
    directory = Path(path)
    return _one(directory, ("*.pth",)), _one(directory, GLOVE_PATTERNS)


def load_elmo(path: PathLike, stateful: bool = False, dtype: torch.dtype = torch.float32) -> BiLM:
    """The biLM of an ELMo model directory in any of the ELMo formats, its weights in ``dtype``."""
    found = detect_format(path)
    if found == OURS:
        return load_bilm(path, stateful=stateful, dtype=dtype)
    if found == MANYLANGS:
        return load_manylangs(path, stateful=stateful, dtype=dtype)
    if found == BILM_TF:
        return load_bilm_tf(*bilm_tf_files(path), stateful=stateful, dtype=dtype)
    raise ModelDirError(f"{path} holds a CoVe model (a .pth and GloVe vectors), not an ELMo model; use it as cove")


def load_cove(path: PathLike) -> CoveLayers:
    """The CoVe layers (GloVe + MT-LSTM) of a CoVe model directory: a "cove-encoder" or "cove-mt"
    directory of ours, or the published ``wmtlstm-*.pth`` beside a GloVe text file."""
    found = detect_format(path)
    if found == COVE_PTH:
        return load_published_cove(*cove_pth_files(path))
    if found != OURS:
        raise ModelDirError(f"{path} holds an ELMo model ({found}), not a CoVe model; use it as elmo")
    return load_cove_layers(path)


def _matches(directory: Path, patterns: tuple[str, ...]) -> list[Path]:
    """The files of the first pattern that matches any (an exact name before a wildcard)."""
    for pattern in patterns:
        found = sorted(p for p in directory.glob(pattern) if p.is_file())
        if found:
            return found
    return []


def _one(directory: Path, patterns: tuple[str, ...]) -> Path:
    found = _matches(directory, patterns)
    if len(found) != 1:
        what = "no file" if not found else f"{len(found)} files ({', '.join(p.name for p in found[:3])})"
        raise ModelDirError(f"{directory} has {what} matching {' or '.join(patterns)}; it needs exactly one")
    return found[0]
