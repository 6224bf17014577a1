"""Where a model named on the command line, in a config or in the Python API is: the one resolver.

One rule for names, the same wherever a model is taken (every command, ``add_pipe`` configs, the
loaders, ``load_encoder``, the dashboard):

* ``None``, ``""`` and ``"default"``: the small English model shipped with the package
  (``spacy_contextual/assets/<kind>``).
* A path (it holds a ``/``, or starts with ``.`` or ``~``: ``./NAME``, ``~/models/m``, ``/data/m``): that
  folder.
* A bare ``NAME`` of the catalog (``catalog.py``) or of the cache: that model, fetched into the cache on
  first use (``fetch.py``), as a package name is in ``spacy.load``. A model in the cache is found by its
  record alone (``cache.py``), whether or not the catalog that fetched it is set now. A folder ``./NAME``
  here is then not used, and a ``ShadowWarning`` says so.
* Any other bare ``NAME``: the folder of that name here.
* Anything else is "not a model name or folder", with the nearest model names (``difflib``) and
  ``spacy-contextual models``.

Reading a name (``read_model_name``) touches no network and writes nothing; ``ModelName.resolve()``
fetches what is missing. The command line reads every name first, checks its outputs, and only then
resolves each model once (``cli/params.py``); ``resolve_model_dir`` does both steps for the Python API.
"""

from __future__ import annotations

import difflib
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..errors import ContextualError, quoted
from ..kinds import KINDS, a_model, kind_name
from ..locations import ASSETS
from ..text_files import is_dir, is_file
from ..types import PathLike
from ..user_paths import expand_user
from ..writer import note_read
from .catalog import NAME, CatalogEntry, find_entry, load_catalog

DEFAULT_NAMES = (None, "", "default", "null", "None")
BUNDLED, FOLDER, CATALOG, CACHED = "bundled", "folder", "catalog", "cached"
MAX_SUGGESTIONS = 3
MAX_NAME_CHARS = 100  # a model name is at most this long (catalog.NAME); longer text gets no suggestions


class ShadowWarning(UserWarning):
    """A folder in the working directory has the name of a model of the catalog or the cache; the name
    means the model."""


class ModelNotFoundError(ContextualError, FileNotFoundError):
    """A name that is no model of the catalog or the cache, nor a folder (or a bundled model missing)."""


def is_default(name_or_path: PathLike | None) -> bool:
    """True for the names that mean the bundled model (``null``/``""`` are unset config values)."""
    return name_or_path is None or str(name_or_path).strip() in DEFAULT_NAMES


def bundled_model_dir(kind: str) -> Path:
    check_kind(kind)
    return ASSETS / kind


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ContextualError(f"unknown encoder {kind!r}: choose one of {', '.join(KINDS)}")


def is_path(text: str) -> bool:
    """Written as a path (``./m``, ``~/m``, ``/data/m``, ``m/sub``), so never a model name."""
    separators = [sep for sep in ("/", os.sep, os.altsep) if sep]
    return text.startswith((".", "~")) or any(sep in text for sep in separators)


@dataclass(frozen=True)
class ModelName:
    """What a model name stands for, read without touching the network: the bundled model, a local folder
    (or file), a catalog model or a cached one. ``path`` is its folder, for a catalog model where the cache
    holds (or will hold) it."""

    kind: str
    text: str
    source: str  # BUNDLED, FOLDER, CATALOG or CACHED
    path: Path
    entry: CatalogEntry | None = None  # CATALOG: what to fetch

    def visible(self) -> Path | None:
        """The model's folder if it is on disk already, so that outputs are checked against it before
        anything is fetched; None for a catalog model not cached yet."""
        return self.path if self.path.exists() else None

    def resolve(self) -> Path:
        """The model's folder (or file), checked; a catalog model is fetched first if it is not cached.
        The running command then reads it (``writer.note_read``)."""
        if self.source == CATALOG:
            from .fetch import fetch

            path = fetch(self.entry)
        elif self.source == CACHED:
            from .cache import checked_record

            checked_record(self.path)  # its files against its record, as for a catalog model
            path = self.path
        else:
            path = self.path
            if self.source == BUNDLED and not (path / "config.json").is_file():
                raise ModelNotFoundError(
                    f"the bundled {kind_name(self.kind)} model is missing from {path} (a broken installation?); "
                    f"reinstall spacy-contextual or give the folder of {a_model(self.kind)}"
                )
        note_read(path)
        return path


def read_model_name(kind: str, name_or_path: PathLike | None, files: bool = False) -> ModelName:
    """What ``name_or_path`` stands for (see the module docstring); ``files``: an existing file is taken
    too (a command that reads e.g. a bilm-tf weights.hdf5). Nothing is fetched."""
    check_kind(kind)
    if is_default(name_or_path):
        return ModelName(kind, "default", BUNDLED, bundled_model_dir(kind))
    text = str(name_or_path).strip()
    if is_path(text):
        return _local(kind, text, files)
    model = _catalog_or_cached(kind, text) if NAME.fullmatch(text) else None
    if model is None:
        return _local(kind, text, files)
    if is_dir(Path(text)):
        where = "of the catalog" if model.source == CATALOG else "in the model cache"
        warnings.warn(
            f"{text!r} is a model {where}, and also the folder ./{text} here: the model is used; write ./{text} "
            "to use the folder",
            ShadowWarning,
            stacklevel=2,
        )
    return model


def resolve_model_dir(kind: str, name_or_path: PathLike | None = None) -> Path:
    """The model directory ``name_or_path`` stands for, fetched if need be; a name that is none is
    refused with the nearest names and what to pass."""
    return read_model_name(kind, name_or_path).resolve()


def _catalog_or_cached(kind: str, name: str) -> ModelName | None:
    from .cache import cached_record, model_cache_dir

    entry = find_entry(name)
    record = None if entry is not None else cached_record(name)
    if entry is None and record is None:
        return None
    encoder = entry.encoder if entry is not None else record["encoder"]
    if encoder != kind:
        raise ContextualError(f"{name!r} is {a_model(encoder)}; this needs {a_model(kind)}")
    return ModelName(kind, name, CATALOG if entry is not None else CACHED, model_cache_dir(name), entry)


def _local(kind: str, text: str, files: bool) -> ModelName:
    path = expand_user(text, "the model")  # no such home: one line (user_paths.py)
    if is_dir(path) or (files and is_file(path)):
        return ModelName(kind, text, FOLDER, path)
    if is_file(path):
        raise ModelNotFoundError(
            f"{quoted(text)} is a file, not a model folder: give the folder that holds {a_model(kind)}'s files"
        )
    raise unknown_name_error(kind, text)


def unknown_name_error(kind: str, text: str) -> ModelNotFoundError:
    """ "not a model name or folder", with the nearest names of this kind's models in the catalog and
    the cache."""
    return ModelNotFoundError(
        f"{quoted(text)} is not a model name or folder{nearest_hint(text, kind)}; `spacy-contextual models` lists "
        f"the names (a folder of {a_model(kind)}, or 'default' for the bundled one, works too)"
    )


def nearest_hint(text: str, kind: str | None = None) -> str:
    """ "; the nearest model names: a, b" (``difflib``) among the models of ``kind`` (of any kind when
    None) in the catalog and the cache; "" when none is near, or ``text`` is a path."""
    if is_path(text) or len(text) > MAX_NAME_CHARS:
        return ""
    nearest = difflib.get_close_matches(text.lower(), model_names(kind), MAX_SUGGESTIONS)
    return f"; the nearest model names: {', '.join(nearest)}" if nearest else ""


def model_names(kind: str | None = None) -> list[str]:
    """The names of ``kind``'s models (every kind's when None): the catalog's, then those only the cache
    holds."""
    from .cache import cached_models

    catalog = [name for name, entry in load_catalog().items() if kind in (None, entry.encoder)]
    cached = [name for name, record in cached_models().items() if kind in (None, record["encoder"])]
    return catalog + [name for name in cached if name not in catalog]
