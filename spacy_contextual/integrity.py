"""The integrity table of a folder: ``{name: {"bytes": int, "sha256": hex}}`` for the files a loader
reads, and the one check of a folder against it.

A model directory's ``manifest.json`` and a cached model's ``download.json`` both hold such a table.
``read_table`` refuses a table that is not one (empty included); ``verify_files`` refuses a name that
leaves the folder (absolute, ``..``, a link pointing outside), a missing file, a size that differs, or
a SHA-256 that differs, each in one line naming the file and ``fix``. Digests of files whose size,
modification time and inode are unchanged since they last passed are not read again in this process;
the others are read in one thread per CPU core (hashlib releases the GIL while it hashes): a sharded
model's check takes half the time on two cores.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

from .errors import ContextualError, quoted

ALGORITHM = "sha256"
_VERIFIED: set[tuple] = set()


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def confined(directory: Path, name: object, source: Path, error: type[ContextualError], fix: str) -> Path:
    """``directory / name`` if ``name`` is a relative path inside ``directory`` (symlinks followed);
    ``source`` names the file that named it."""
    parts = PurePosixPath(name).parts if isinstance(name, str) else ()
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts or "\\" in name or "\x00" in name:
        raise error(
            f"{source} names {quoted(name)}, which is not a file inside {directory}: it is damaged or hostile; {fix}"
        )
    path = directory / name
    if not path.resolve().is_relative_to(directory.resolve()):
        raise error(
            f"{path} is a link to {path.resolve()}, outside {directory}; a model folder holds its own files: replace "
            "the link with a copy of the file"
        )
    return path


def read_table(table: object, source: Path, error: type[ContextualError], fix: str) -> dict[str, dict]:
    """``table`` if it is a non-empty ``{name: {"bytes": int >= 0, "sha256": 64 hex}}``, else one line."""
    entries = table if isinstance(table, dict) else None
    if not entries:
        raise error(f"{source} is damaged (it lists no files, so nothing could be checked); {fix}")
    for name, entry in entries.items():
        valid = (
            isinstance(entry, dict)
            and type(entry.get("bytes")) is int
            and entry["bytes"] >= 0
            and isinstance(entry.get(ALGORITHM), str)
            and len(entry[ALGORITHM]) == 64
            and all(c in "0123456789abcdef" for c in entry[ALGORITHM])
        )
        if not valid:
            raise error(
                f"{source} is damaged (the entry of {quoted(name)} is not bytes + a 64-digit {ALGORITHM}); {fix}"
            )
    return entries


def verify_files(directory: Path, table: dict[str, dict], source: Path, error: type[ContextualError], fix: str) -> None:
    """Every file of ``table`` is inside ``directory`` with its recorded size and SHA-256."""
    stamps = []
    for name, expected in table.items():
        path = confined(directory, name, source, error, fix)
        if not path.is_file():
            raise error(f"{path} is missing (listed in {source.name}); {fix}")
        status = path.stat()
        if status.st_size != expected["bytes"]:
            raise error(
                f"{path} has {status.st_size:,} bytes but {source.name} records {expected['bytes']:,}: the file is "
                f"truncated or was replaced; {fix}"
            )
        stamps.append((name, status.st_size, status.st_mtime_ns, status.st_ino))
    key = (str(directory.resolve()), tuple(stamps))
    if key in _VERIFIED:
        return
    names = list(table)
    with ThreadPoolExecutor(max_workers=min(len(names), len(os.sched_getaffinity(0)))) as pool:
        digests = list(pool.map(file_digest, [directory / name for name in names]))
    for name, digest in zip(names, digests, strict=True):
        if digest != table[name][ALGORITHM]:
            raise error(
                f"{directory / name} does not match its SHA-256 in {source.name}: the file is damaged or was changed "
                f"after it was recorded; {fix}"
            )
    _VERIFIED.add(key)


def table_of(directory: Path, names: list[str]) -> dict[str, dict]:
    """The table of ``names`` (files inside ``directory``) as they are now."""
    return {
        name: {"bytes": (directory / name).stat().st_size, ALGORITHM: file_digest(directory / name)} for name in names
    }
