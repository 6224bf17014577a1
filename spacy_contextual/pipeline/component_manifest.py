"""The integrity manifest of a saved ``elmo`` / ``cove`` component, as a model directory has one
(``formats/manifest.py``): ``nlp.to_disk`` records the size and SHA-256 of the files in the
component's folder (its settings ``cfg`` and the ``model`` file that holds the encoder's weights),
and ``spacy.load`` checks them before any is read, so an altered or truncated file is refused with
its name instead of loading silently or failing somewhere inside msgpack.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import ModelDirError
from ..formats.manifest import MANIFEST_NAME, verify_manifest, write_manifest
from ..types import PathLike

COMPONENT_FILES = ("cfg", "model")


def write_component_manifest(path: PathLike) -> Path:
    path = Path(path)
    return write_manifest(path, [name for name in COMPONENT_FILES if (path / name).is_file()])


def verify_component_manifest(path: PathLike, exclude: Iterable[str] = ()) -> None:
    path = Path(path)
    required = [name for name in COMPONENT_FILES if name not in set(exclude)]
    if not (path / MANIFEST_NAME).is_file():
        names = ", ".join(repr(name) for name in required)
        raise ModelDirError(
            f"{path} has no {MANIFEST_NAME} (the SHA-256 of its files), so they cannot be checked; save the pipeline "
            f'again with nlp.to_disk, or, if you trust its files, record them with: python -c "from '
            f"spacy_contextual.formats.manifest import write_manifest; write_manifest('{path}', [{names}])\""
        )
    verify_manifest(path, required)
