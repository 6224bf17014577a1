"""The model cache: where fetched catalog models live, and the record that lets every load check them.

``$SPACY_CONTEXTUAL_HOME`` (default: the platform's user cache folder) holds one directory per model,
``<home>/<name>/``, which is what loaders read, and the cache's own ``.locks/`` (``lock.py``). A
model's ``download.json`` records, with relative names only (so the cache can be copied to another
machine), every download (URL, bytes, SHA-256, and whether that digest was published or trusted on
first use) and every file of the directory (bytes, SHA-256). A directory counts as cached only with
its record, and the record is written inside the directory before it is moved into place, so a killed
download never looks cached. Every load checks each file's size and digest against the record (once
per process), every name it lists inside the directory (``integrity.py``). The record also names the
model's encoder and the catalog it was fetched through (``"shipped"`` or the user catalog's file, for
information only: nothing is read from it), so a cached model loads by its name alone, whether or not
that catalog is set now (``cached_models``).

Trust is never reset by accident: a model folder whose record is damaged is refused (it cannot be
told which version was trusted), and only ``spacy-contextual download NAME --retrust`` replaces it
with what the server sends now. A folder without a record is refused too, and never replaced or
deleted: it may not be the cache's.

``SPACY_CONTEXTUAL_OFFLINE=1`` forbids any download: a model that is not cached is an error naming
the cache and the command to run on a connected machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .. import environment
from ..errors import ContextualError
from ..integrity import confined, read_table, table_of, verify_files
from ..kinds import KINDS
from ..text_files import read_json
from .catalog import NAME, RECORD_NAME, CatalogEntry, catalog_label, human_bytes

HOME_ENV = environment.HOME.name
OFFLINE_ENV = environment.OFFLINE.name
DOWNLOAD_COMMAND = "spacy-contextual download"
RETRUST = "--retrust"
HEX64 = re.compile(r"[0-9a-f]{64}")  # fullmatch: "$" would let a final newline through
PUBLISHED, TRUSTED, PREFIX = "published", "trust-on-first-use", "prefix"


class CacheError(ContextualError):
    """A cached model that is missing, damaged, or may not be fetched (offline)."""


def cache_home() -> Path:
    home = environment.HOME.get()
    if home is not None:
        return home
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("spacy-contextual"))


def is_offline() -> bool:
    return environment.OFFLINE.get()


def model_cache_dir(name: str) -> Path:
    return cache_home() / name


def refetch_hint(directory: Path) -> str:
    return (
        f"fetch the model again with: {DOWNLOAD_COMMAND} {directory.name} (checked against the digests recorded "
        "at its first download)"
    )


def retrust_hint(directory: Path) -> str:
    return (
        f"which version was trusted is lost: `{DOWNLOAD_COMMAND} {directory.name} {RETRUST}` downloads it again and "
        "trusts what the server sends now"
    )


def read_record(directory: Path) -> dict | None:
    """The download record of a cached model directory; None when there is none. A record that is not
    one (its JSON, its downloads, its table of files, a name outside the directory) is refused."""
    path = directory / RECORD_NAME
    if not path.is_file():
        return None
    fix = retrust_hint(directory)
    record = read_json(path, fix, CacheError)
    downloads = record.get("downloads") if isinstance(record, dict) else None
    if not isinstance(downloads, dict) or not all(
        isinstance(entry, dict) and isinstance(entry.get("sha256"), str) and HEX64.fullmatch(entry["sha256"])
        for entry in downloads.values()
    ):
        raise CacheError(f"{path} is damaged (every download needs its 64-digit sha256); {fix}")
    for name in read_table(record.get("files"), path, CacheError, fix):
        confined(directory, name, path, CacheError, fix)
    return record


def missing_record_error(directory: Path) -> CacheError:
    """A model folder without its record: nothing in it can be checked, and it may not be the cache's."""
    return CacheError(
        f"{directory} has no {RECORD_NAME}, the record of the files trusted at its first download, so nothing in "
        f"it can be checked (and it may not be this cache's: it is never deleted here); move it away, then "
        f"`{DOWNLOAD_COMMAND} {directory.name}` fetches the model again"
    )


def holds_nothing(directory: Path) -> bool:
    """No folder at ``directory``, or an empty one: nothing to check, nothing to lose."""
    try:
        return not any(directory.iterdir())
    except FileNotFoundError:
        return not directory.is_symlink()
    except OSError:  # a file, or a folder that cannot be read: something is there
        return False


def checked_record(directory: Path) -> dict | None:
    """The record of the cached model ``directory``, every file checked against it; None when the
    folder does not exist or is empty. A folder without its record, or failing the check, is refused."""
    if holds_nothing(directory):
        return None
    record = read_record(directory)
    if record is None:
        raise missing_record_error(directory)
    verify_cached(directory, record)
    return record


def write_record(directory: Path, entry: CatalogEntry, downloads: dict[str, dict]) -> dict:
    """Record ``downloads``, the catalog they came through and the size and digest of every file now in
    ``directory``."""
    names = recorded_names(directory)
    record = {"name": entry.name, "encoder": entry.encoder, "format": entry.format, "language": entry.language}
    record.update(catalog=catalog_label(entry.origin), downloads=downloads)
    record["files"] = table_of(directory, names)
    (directory / RECORD_NAME).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def verify_cached(directory: Path, record: dict) -> None:
    """Every recorded file is there, inside the folder, with its recorded size and SHA-256, and the folder
    holds no file that the record does not list (a loader would read it unchecked)."""
    unlisted = sorted(set(recorded_names(directory)) - set(record["files"]))
    if unlisted:
        raise CacheError(
            f"{directory / unlisted[0]} is not listed in {RECORD_NAME}, so it cannot be checked: the record or the "
            f"folder was changed after the download; {refetch_hint(directory)}"
        )
    verify_files(directory, record["files"], directory / RECORD_NAME, CacheError, refetch_hint(directory))


def recorded_names(directory: Path) -> list[str]:
    """The relative names of the files a record lists: every file below ``directory`` but the record."""
    return sorted(
        p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file() and p.name != RECORD_NAME
    )


def hash_status(entry: CatalogEntry, record: dict | None) -> str:
    """published (every file's SHA-256 is published), trust-on-first-use (recorded at the first download,
    checked since) or "none yet" (not downloaded); a checked published prefix is named."""
    if entry.hash_published:
        return PUBLISHED
    prefixes = [file.sha256_prefix for file in entry.files if file.sha256_prefix]
    status = TRUSTED if record is not None else "none yet"
    return status + (f" (+ published prefix {', '.join(prefixes)})" if prefixes else "")


def cached_bytes(record: dict | None) -> int:
    return sum(entry["bytes"] for entry in record["files"].values()) if record else 0


def cached_state(directory: Path) -> tuple[str, dict | None]:
    """What the cache holds of a model, in words ("no", "yes, 12.3 MiB", or why it is refused), and its
    record (None unless it is readable; its files are not checked here)."""
    if not directory.exists():
        return "no", None
    try:
        record = read_record(directory)
    except CacheError:
        return "damaged record (--retrust)", None
    if record is None:
        return "no record (refused)", None
    return f"yes, {human_bytes(cached_bytes(record))}", record


def cached_record(name: str) -> dict | None:
    """The record of the cached model ``name`` when it is one, readable, of a known encoder; else None
    (nothing is checked here beyond the record itself: loading checks the files)."""
    if not NAME.fullmatch(name):
        return None
    try:
        record = read_record(model_cache_dir(name))
    except (CacheError, OSError):
        return None
    return record if record is not None and record.get("encoder") in KINDS else None


def cached_models() -> dict[str, dict]:
    """name -> record of every model in the cache that has a readable record, by name."""
    try:
        names = sorted(path.name for path in cache_home().iterdir() if path.is_dir())
    except OSError:  # no cache yet
        return {}
    records = {name: cached_record(name) for name in names}
    return {name: record for name, record in records.items() if record is not None}
