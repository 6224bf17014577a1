"""Where a model named on the command line, in a config or in the Python API is: the one resolver.

``None``, ``""`` and ``"default"`` name the small English model shipped with the package
(``spacy_contextual/assets/<kind>``); an existing directory is used as it is; any other name is looked
up in the model catalog (``catalog.py``) and stands for its cache directory, fetched on first use
(``fetch.py``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ContextualError, quoted
from ..locations import ASSETS
from ..text_files import is_dir
from ..types import PathLike
from ..writer import note_read

KINDS = ("elmo", "cove")
DEFAULT_NAMES = (None, "", "default", "null", "None")


def is_default(name_or_path: PathLike | None) -> bool:
    """True for the names that mean the bundled model (``null``/``""`` are unset config values)."""
    return name_or_path is None or str(name_or_path).strip() in DEFAULT_NAMES


def bundled_model_dir(kind: str) -> Path:
    if kind not in KINDS:
        raise ContextualError(f"unknown encoder {kind!r}: choose one of {', '.join(KINDS)}")
    return ASSETS / kind


def resolve_model_dir(kind: str, name_or_path: PathLike | None = None) -> Path:
    """The model directory ``name_or_path`` stands for; a missing one is refused with what to pass."""
    if not is_default(name_or_path):
        path = Path(str(name_or_path).strip()).expanduser()
        if is_dir(path):
            note_read(path)
            return path
        from .fetch import catalog_model_dir

        fetched = catalog_model_dir(kind, str(name_or_path).strip())
        if fetched is None:
            raise FileNotFoundError(
                f"{quoted(path)} is not a directory: give the path of a {kind} model directory (config.json + "
                "model.safetensors), a model name from `spacy-contextual models`, or 'default' for the bundled model"
            )
        note_read(fetched)
        return fetched
    path = bundled_model_dir(kind)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"the bundled {kind} model is missing from {path} (a broken installation?); reinstall "
            f"spacy-contextual or give the path of a {kind} model directory"
        )
    return path
