"""The integrity manifest of a model directory: ``manifest.json`` holds the size and SHA-256 digest
of every file the loaders read (config.json, the weights, the vocabularies).

Loading checks every listed file against it, so a flipped byte anywhere, a truncated copy or a
missing shard is refused with the name of the file, before any weight is used. Every name is
confined to the directory: a relative path without ``..`` that, symlinks followed, stays inside it.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import ModelDirError
from ..integrity import ALGORITHM, confined, read_table, table_of, verify_files
from ..text_files import read_json
from ..types import PathLike
from ..writer import atomic_file

MANIFEST_NAME = "manifest.json"
WRITE_COMMAND = "spacy-contextual write-manifest"
FIX = "copy the model directory again"


def write_manifest(directory: PathLike, names: list[str]) -> Path:
    """Record the size and digest of ``names`` (files inside ``directory``) in its manifest.json."""
    directory = Path(directory)
    for name in names:
        confined(directory, name, directory, ModelDirError, FIX)
    path = directory / MANIFEST_NAME
    with atomic_file(path) as tmp:
        document = {"algorithm": ALGORITHM, "files": table_of(directory, names)}
        tmp.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return path


def read_manifest(directory: PathLike) -> dict[str, dict]:
    """name -> {"bytes", "sha256"} of every file the manifest lists."""
    path = Path(directory) / MANIFEST_NAME
    if not path.is_file():
        raise ModelDirError(
            f"{directory} has no {MANIFEST_NAME} (the SHA-256 of its files), so its files cannot be checked; "
            f"if you trust them, write one with: {WRITE_COMMAND} {directory}"
        )
    manifest = read_json(path, FIX, ModelDirError)
    if not isinstance(manifest, dict) or manifest.get("algorithm") != ALGORITHM:
        raise ModelDirError(f'{path} is damaged (expected {{"algorithm": "{ALGORITHM}", "files": ...}}); {FIX}')
    return read_table(manifest.get("files"), path, ModelDirError, FIX)


def verify_manifest(directory: PathLike, required: list[str]) -> None:
    """Every listed file has its recorded size and digest, and every file in ``required`` is listed."""
    directory = Path(directory)
    files = read_manifest(directory)
    unlisted = sorted(set(required) - set(files))
    if unlisted:
        raise ModelDirError(
            f"{directory / unlisted[0]} is not listed in {directory / MANIFEST_NAME}: the directory was changed "
            f"after it was saved; {FIX}"
        )
    verify_files(directory, files, directory / MANIFEST_NAME, ModelDirError, FIX)
