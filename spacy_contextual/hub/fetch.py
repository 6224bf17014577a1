"""Fetching a catalog model into the cache: the only code in the package that downloads.

``fetch(entry)`` returns the model's cache directory (``cache.py``), downloading it first when it is
not cached. The download, under a file lock per model so that concurrent processes fetch once:

1. ``<home>/<name>.tmp/`` is emptied; each file is downloaded there with pooch (URL, then mirrors),
   which streams to a temporary file and renames it only when complete and, where a SHA-256 is
   known, only when it matches. Known means published in the catalog, or recorded at this model's
   first download (trust on first use). A published ``sha256_prefix`` and ``bytes`` are checked too.
2. Archives are unpacked (``archive.py``); the record (``download.json``) is written; the folder is
   fsynced and renamed to ``<home>/<name>/`` in one step (``atomic.py``).

Any failure removes ``<name>.tmp`` and raises one line naming the URL and the cause (an HTTP status,
refused, timed out, dropped, a wrong digest); a kill leaves only ``<name>.tmp``, which is never read
and is emptied by the next download. ``SPACY_CONTEXTUAL_TIMEOUT`` (seconds, default 60) bounds the
wait for the server's next bytes.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

from ..errors import ContextualError
from ..integrity import file_digest
from ..writer import atomic_directory
from .archive import unpack_zip
from .cache import (
    DOWNLOAD_COMMAND,
    HOME_ENV,
    OFFLINE_ENV,
    PREFIX,
    PUBLISHED,
    RECORD_NAME,
    TRUSTED,
    CacheError,
    cache_home,
    is_offline,
    model_cache_dir,
    read_record,
    verify_cached,
    write_record,
)
from .catalog import CatalogEntry, CatalogFile, find_entry

TIMEOUT_ENV = "SPACY_CONTEXTUAL_TIMEOUT"
DEFAULT_TIMEOUT = 60.0
STAGING = ".download"  # archives wait here, inside the temporary model folder, until unpacked


class FetchError(ContextualError):
    """A model file that could not be downloaded, or whose bytes are not the expected ones."""


def report_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def download_timeout() -> float:
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        timeout = float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        timeout = -1.0
    if not timeout > 0:
        raise ContextualError(f"{TIMEOUT_ENV}={text!r} is not a number of seconds above 0")
    return timeout


def catalog_model_dir(kind: str, name: str) -> Path | None:
    """The cached directory of the catalog model ``name`` (fetched on first use); None if no such name."""
    entry = find_entry(name)
    if entry is None:
        return None
    if entry.encoder != kind:
        raise ContextualError(f"{entry.name!r} is an {entry.encoder} model; this needs a {kind} model")
    return fetch(entry)


def fetch(entry: CatalogEntry, report: Callable[[str], None] = report_to_stderr, progressbar: bool = True) -> Path:
    """The cache directory holding ``entry``'s files, checked; downloaded first if it is not cached.

    A cached copy that fails its check is an error (fetching again would hide the damage), except for
    :func:`refetch`, which downloads it again against the digests recorded the first time."""
    target = model_cache_dir(entry.name)
    record = read_record(target)
    if record is not None:
        verify_cached(target, record)
        return target
    if is_offline():
        raise CacheError(
            f"{entry.name!r} is not in the model cache {cache_home()} and {OFFLINE_ENV}=1 forbids downloading: "
            f"run `{DOWNLOAD_COMMAND} {entry.name}` on a connected machine and copy its cache folder here (point "
            f"{HOME_ENV} at the copy)"
        )
    return _download_locked(entry, target, report, progressbar, refresh=False)


def refetch(entry: CatalogEntry, report: Callable[[str], None] = report_to_stderr, progressbar: bool = True) -> Path:
    """:func:`fetch`, but a cached copy that fails its check is downloaded again (``download`` does this)."""
    target = model_cache_dir(entry.name)
    try:
        return fetch(entry, report, progressbar)
    except CacheError:
        if is_offline() or not (target / RECORD_NAME).is_file():  # offline, or nothing of ours to replace
            raise
    report(f"{entry.name}: the cached copy in {target} fails its check; downloading it again")
    return _download_locked(entry, target, report, progressbar, refresh=True)


def read_record_or_none(directory: Path) -> dict | None:
    try:
        return read_record(directory)
    except CacheError:
        return None


def _download_locked(
    entry: CatalogEntry, target: Path, report: Callable[[str], None], progressbar: bool, refresh: bool
) -> Path:
    from filelock import FileLock, Timeout

    target.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(target.parent / f".{entry.name}.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        report(f"{entry.name}: another process is downloading it; waiting for it to finish")
        lock.acquire()
    try:
        record = read_record_or_none(target)
        if record is not None and not refresh:  # the other process finished it
            verify_cached(target, record)
            return target
        return _download(entry, target, record, report, progressbar)
    finally:
        lock.release()


def _download(
    entry: CatalogEntry, target: Path, previous: dict | None, report: Callable[[str], None], progressbar: bool
) -> Path:
    trusted = previous["downloads"] if previous else {}

    def announce(url: str) -> None:
        report(f"downloading {url}\n  into {target}")

    with atomic_directory(target, may_replace=lambda path: (path / RECORD_NAME).is_file()) as folder:
        downloads = {}
        for file in entry.files:
            expected = file.sha256 or trusted.get(file.name, {}).get("sha256")
            origin = "published" if file.sha256 else "recorded at the first download"
            staging = folder / STAGING if file.unpack else folder
            url, path, digest = _download_file(file, staging, expected, origin, progressbar, announce)
            check = PUBLISHED if file.sha256 else (PREFIX if file.sha256_prefix else TRUSTED)
            downloads[file.name] = {"url": url, "bytes": path.stat().st_size, "sha256": digest, "check": check}
            if file.unpack:
                _unpack_into(path, folder)
        shutil.rmtree(folder / STAGING, ignore_errors=True)
        write_record(folder, entry, downloads)
    report(f"{entry.name}: cached in {target}")
    return target


def _download_file(
    file: CatalogFile,
    folder: Path,
    sha256: str | None,
    origin: str,
    progressbar: bool,
    announce: Callable[[str], None],
) -> tuple[str, Path, str]:
    """Download ``file`` from its first URL that gives the expected bytes; returns (that URL, the local
    path, its SHA-256)."""
    import pooch

    pooch.get_logger().setLevel(logging.WARNING)  # we print our own line per download
    failures = []
    for url in file.urls:
        announce(url)
        try:
            path = Path(
                pooch.retrieve(
                    url,
                    known_hash=f"sha256:{sha256}" if sha256 else None,
                    fname=file.name,
                    path=folder,
                    downloader=_downloader(url, progressbar),
                    progressbar=progressbar,
                )
            )
        except Exception as error:  # pooch and requests raise many types; each becomes one cause
            failures.append(f"{url}: {_cause(error, sha256, origin)}")
            continue
        digest = file_digest(path)
        mismatch = _published_mismatch(file, path.stat().st_size, digest)
        if mismatch is None:
            return url, path, digest
        path.unlink()
        failures.append(f"{url}: {mismatch}")
    raise FetchError(f"could not download {file.name}: " + "; ".join(failures))


def _downloader(url: str, progressbar: bool):
    import pooch

    scheme = urlparse(url).scheme
    if scheme == "file":
        return _copy_local
    if scheme in ("http", "https"):
        return pooch.HTTPDownloader(progressbar=progressbar, timeout=download_timeout())
    return pooch.downloaders.choose_downloader(url, progressbar=progressbar)


def _copy_local(url: str, output_file, pooch_instance) -> None:
    """A pooch downloader for ``file://`` URLs: copies the local file."""
    source = Path(url2pathname(urlparse(url).path))
    with open(source, "rb") as reader, open(output_file, "wb") as writer:
        shutil.copyfileobj(reader, writer, 1 << 20)


def _cause(error: Exception, sha256: str | None, origin: str) -> str:
    """The reason a download failed, in a few words."""
    import requests

    if isinstance(error, requests.HTTPError) and error.response is not None:
        return f"HTTP {error.response.status_code} {error.response.reason}".rstrip()
    timed_out = f"timed out (no data for {download_timeout():g} s; {TIMEOUT_ENV} sets the limit)"
    if isinstance(error, requests.Timeout) or "timed out" in str(error).lower():  # mid-file: a ConnectionError
        return timed_out
    if isinstance(error, requests.exceptions.ChunkedEncodingError):
        return "the connection dropped before the whole file arrived"
    if isinstance(error, requests.ConnectionError):
        text = str(error)
        if "refused" in text.lower():
            return "connection refused"
        if "IncompleteRead" in text or "aborted" in text.lower() or "reset" in text.lower():
            return "the connection dropped before the whole file arrived"
        if "resolve" in text.lower() or "name or service" in text.lower():
            return "the host name could not be resolved"
        return f"cannot connect ({text[:120]})"
    if isinstance(error, ValueError) and sha256 and "hash" in str(error).lower():
        found = re.search(r"\(([0-9a-f]{64})\)", str(error))
        return (
            f"wrong SHA-256 {found.group(1) if found else '?'} (the one {origin} is {sha256}): the file is corrupted "
            "or is not the expected one"
        )
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return f"{type(error).__name__}: {error}"[:200]


def _published_mismatch(file: CatalogFile, size: int, digest: str) -> str | None:
    """What differs from the published size or SHA-256 prefix, if anything."""
    if file.bytes is not None and size != file.bytes:
        return f"{size:,} bytes arrived, {file.bytes:,} are published"
    if file.sha256_prefix and not digest.startswith(file.sha256_prefix):
        return (
            f"wrong SHA-256 {digest}: the published prefix is {file.sha256_prefix}; the file is corrupted or is not "
            "the one published"
        )
    return None


def _unpack_into(archive: Path, folder: Path) -> None:
    """Unpack ``archive`` beside it, then move its files into ``folder`` (refusing to overwrite one)."""
    unpacked = archive.parent / (archive.name + ".unpacked")
    unpacked.mkdir()
    unpack_zip(archive, unpacked)
    archive.unlink()
    for item in unpacked.iterdir():
        destination = folder / item.name
        if destination.exists() or item.name in (RECORD_NAME, STAGING):
            raise FetchError(f"{archive.name} holds {item.name!r}, which clashes with another file of the model")
        item.rename(destination)
    unpacked.rmdir()
