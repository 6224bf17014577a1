"""Where a model named on the command line, in a config or in the Python API is: the one resolver.

``None``, ``""`` and ``"default"`` name the small English model shipped with the package
(``spacy_contextual/assets/<kind>``). A name of the model catalog (``catalog.py``) stands for its
cache directory, fetched on first use (``fetch.py``), as a package name does in ``spacy.load``: a
folder of the same name in the working directory is not used, and a ``ShadowWarning`` says so
(``./NAME`` names the folder). Any other existing directory is used as it is.
"""

from __future__ import annotations

import warnings
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


class ShadowWarning(UserWarning):
    """A folder in the working directory has the name of a catalog model; the name means the model."""


def bundled_model_dir(kind: str) -> Path:
    if kind not in KINDS:
        raise ContextualError(f"unknown encoder {kind!r}: choose one of {', '.join(KINDS)}")
    return ASSETS / kind


def resolve_model_dir(kind: str, name_or_path: PathLike | None = None) -> Path:
    """The model directory ``name_or_path`` stands for; a missing one is refused with what to pass."""
    if not is_default(name_or_path):
        from .catalog import NAME, find_entry
        from .fetch import catalog_model_dir

        name = str(name_or_path).strip()
        path = Path(name).expanduser()
        entry = find_entry(name) if NAME.match(name) else None  # a path is never a catalog name
        if entry is None:
            if is_dir(path):
                note_read(path)
                return path
            raise FileNotFoundError(
                f"{quoted(path)} is not a directory: give the path of a {kind} model directory (config.json + "
                "model.safetensors), a model name from `spacy-contextual models`, or 'default' for the bundled model"
            )
        if is_dir(path):
            warnings.warn(
                f"{name!r} is a model of the catalog, and also the folder ./{name} here: the catalog model is used; "
                f"write ./{name} to use the folder",
                ShadowWarning,
                stacklevel=2,
            )
        fetched = catalog_model_dir(kind, entry)
        note_read(fetched)
        return fetched
    path = bundled_model_dir(kind)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"the bundled {kind} model is missing from {path} (a broken installation?); reinstall "
            f"spacy-contextual or give the path of a {kind} model directory"
        )
    note_read(path)
    return path
