"""The integrity manifest of a model directory: ``manifest.json`` holds the size and SHA-256 digest
of every file the loaders read (config.json, the weights, the vocabularies).

Loading checks every listed file against it, so a flipped byte anywhere, a truncated copy or a
missing shard is refused with the name of the file, before any weight is used. Every name is
confined to the directory: a relative path without ``..`` that, symlinks followed, stays inside it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath

from ..errors import ModelDirError, quoted
from ..text_files import read_json
from ..types import PathLike
from .atomic import atomic_file

MANIFEST_NAME = "manifest.json"
ALGORITHM = "sha256"
WRITE_COMMAND = "spacy-contextual write-manifest"


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def confined(directory: Path, name: object, source: Path) -> Path:
    """``directory / name`` if ``name`` is a relative path inside ``directory`` (symlinks followed);
    ``source`` names the file that named it."""
    parts = PurePosixPath(name).parts if isinstance(name, str) else ()
    path = directory / name if parts else directory
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts or "\\" in name:
        raise ModelDirError(
            f"{source} names {quoted(name)}, which is not a file inside {directory}; the manifest is damaged or "
            "hostile: copy the model directory again"
        )
    if not path.resolve().is_relative_to(directory.resolve()):
        raise ModelDirError(
            f"{path} is a link to {path.resolve()}, outside {directory}; a model directory holds its own files: "
            "replace the link with a copy of the file"
        )
    return path


def write_manifest(directory: PathLike, names: list[str]) -> Path:
    """Record the size and digest of ``names`` (files inside ``directory``) in its manifest.json."""
    directory = Path(directory)
    for name in names:
        confined(directory, name, directory)
    files = {
        name: {"bytes": (directory / name).stat().st_size, ALGORITHM: file_digest(directory / name)} for name in names
    }
    path = directory / MANIFEST_NAME
    with atomic_file(path) as tmp:
        tmp.write_text(json.dumps({"algorithm": ALGORITHM, "files": files}, indent=1) + "\n", encoding="utf-8")
    return path


def read_manifest(directory: PathLike) -> dict[str, dict]:
    """name -> {"bytes", "sha256"} of every file the manifest lists."""
    path = Path(directory) / MANIFEST_NAME
    if not path.is_file():
        raise ModelDirError(
            f"{directory} has no {MANIFEST_NAME} (the SHA-256 of its files), so its files cannot be checked; "
            f"if you trust them, write one with: {WRITE_COMMAND} {directory}"
        )
    manifest = read_json(path, "copy the model directory again", ModelDirError)
    try:
        files = manifest["files"]
        if manifest.get("algorithm") != ALGORITHM or not all(
            isinstance(entry.get("bytes"), int) and isinstance(entry.get(ALGORITHM), str) for entry in files.values()
        ):
            raise ValueError(f'expected {{"algorithm": "{ALGORITHM}", "files": {{name: {{"bytes", "{ALGORITHM}"}}}}}}')
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ModelDirError(f"{path} is damaged ({error}); copy the model directory again") from None
    return files


def verify_manifest(directory: PathLike, required: list[str]) -> None:
    """Every listed file has its recorded size and digest, and every file in ``required`` is listed."""
    directory = Path(directory)
    files = read_manifest(directory)
    unlisted = sorted(set(required) - set(files))
    if unlisted:
        raise ModelDirError(
            f"{directory / unlisted[0]} is not listed in {directory / MANIFEST_NAME}: the directory was changed "
            "after it was saved; copy the model directory again"
        )
    for name, entry in files.items():
        path = confined(directory, name, directory / MANIFEST_NAME)
        if not path.is_file():
            raise ModelDirError(f"{path} is missing (listed in {MANIFEST_NAME}); copy the whole model directory")
        size = path.stat().st_size
        if size != entry["bytes"]:
            raise ModelDirError(
                f"{path} has {size:,} bytes but {MANIFEST_NAME} records {entry['bytes']:,}: the file is truncated "
                "or was replaced; copy the model directory again"
            )
        if file_digest(path) != entry[ALGORITHM]:
            raise ModelDirError(
                f"{path} does not match its SHA-256 in {MANIFEST_NAME}: the file is damaged (or was changed after "
                "saving); copy the model directory again"
            )
