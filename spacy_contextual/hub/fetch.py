"""Fetching a catalog model into the cache: the only code in the package that downloads.

``fetch(entry)`` returns the model's cache directory (``cache.py``), downloading it first when it is
not cached. The download, under the model's lock (``lock.py``: concurrent processes fetch once, and
a process waits for another a bounded time):

1. Each file is downloaded into the writer's working folder (``writer.atomic_directory``) with pooch
   (URL, then mirrors) and our downloader (``stream.py``), which bounds its size and time while it
   streams. Its SHA-256 is compared with the one published in the catalog or recorded at this
   model's first download (trust on first use); a published ``sha256_prefix`` and ``bytes`` are
   checked too.
2. Archives are unpacked (``archive.py``, with its own limits); the record (``download.json``) is
   written; the folder is fsynced and takes the place of ``<home>/<name>/`` in one step.

Any failure removes the working folder and raises one line naming the URL and the cause (an HTTP
status, refused, timed out, dropped, too large, too slow, a wrong digest with both digests).
"""

from __future__ import annotations

import logging
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import ContextualError
from ..integrity import file_digest
from ..writer import atomic_directory, interrupted_versions
from .archive import unpack_zip
from .cache import (
    DOWNLOAD_COMMAND,
    HOME_ENV,
    OFFLINE_ENV,
    PREFIX,
    PUBLISHED,
    RECORD_NAME,
    RETRUST,
    TRUSTED,
    CacheError,
    cache_home,
    checked_record,
    holds_nothing,
    is_offline,
    missing_record_error,
    model_cache_dir,
    read_record,
    retrust_hint,
    write_record,
)
from .catalog import CatalogEntry, CatalogFile
from .limits import MAX_BYTES_ENV, TIMEOUT_ENV, byte_limit, limit
from .lock import model_lock
from .stream import BoundedDownloader

STAGING = ".download"  # archives wait here, inside the temporary model folder, until unpacked


class FetchError(ContextualError):
    """A model file that could not be downloaded, or whose bytes are not the expected ones."""


def report_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fetch(entry: CatalogEntry, report: Callable[[str], None] = report_to_stderr, progressbar: bool = True) -> Path:
    """The cache directory holding ``entry``'s files, checked; downloaded first if it is not cached.

    A cached copy that fails its check, or whose record is missing or damaged, is an error: fetching
    again would hide the damage (:func:`refetch` is the explicit way)."""
    target = model_cache_dir(entry.name)
    if checked_record(target) is not None:
        return target
    if is_offline():
        raise CacheError(
            f"{entry.name!r} is not in the model cache {cache_home()} and {OFFLINE_ENV}=1 forbids downloading: "
            f"run `{DOWNLOAD_COMMAND} {entry.name}` on a connected machine and copy its cache folder here (point "
            f"{HOME_ENV} at the copy)"
        )
    return _download_locked(entry, target, report, progressbar, again=False, retrust=False)


def refetch(
    entry: CatalogEntry,
    report: Callable[[str], None] = report_to_stderr,
    progressbar: bool = True,
    retrust: bool = False,
) -> Path:
    """What ``spacy-contextual download NAME`` does: :func:`fetch`, but a cached copy whose files fail
    their check is downloaded again, against the digests recorded the first time (a server file that
    changed since is refused). With ``retrust`` the model is downloaded again whatever the cache holds,
    and what the server sends now is trusted (published digests still apply); only this replaces a
    copy whose record is damaged. A folder without a record is never replaced."""
    target = model_cache_dir(entry.name)
    if not retrust:
        try:
            return fetch(entry, report, progressbar)
        except CacheError:
            if is_offline() or read_record_or_none(target) is None:  # offline, or no record to check against
                raise
        report(f"{entry.name}: the cached copy in {target} fails its check; downloading it again")
    elif is_offline():
        raise CacheError(f"{OFFLINE_ENV}=1 forbids downloading; {RETRUST} downloads {entry.name!r} again")
    return _download_locked(entry, target, report, progressbar, again=True, retrust=retrust)


def read_record_or_none(directory: Path) -> dict | None:
    try:
        return read_record(directory)
    except CacheError:
        return None


def _download_locked(
    entry: CatalogEntry, target: Path, report: Callable[[str], None], progressbar: bool, again: bool, retrust: bool
) -> Path:
    """Under the model's lock: clear this model's stale working folders, look again (another process
    may have finished it), then download."""
    with model_lock(target.parent, entry.name, report):
        for stale in interrupted_versions(target):  # a killed download's working folders: the cache's own
            shutil.rmtree(stale, ignore_errors=True)
        if not again and checked_record(target) is not None:  # the other process finished it
            return target
        if not holds_nothing(target) and not (target / RECORD_NAME).is_file():
            raise missing_record_error(target)
        previous = read_record_or_none(target) if retrust else read_record(target)  # damaged: refused, or retrust
        return _download(entry, target, report, progressbar, previous=previous, retrust=retrust)


def _download(
    entry: CatalogEntry,
    target: Path,
    report: Callable[[str], None],
    progressbar: bool,
    previous: dict | None,
    retrust: bool,
) -> Path:
    """Download ``entry`` in place of ``target``; each file checked against its published digest, or
    the one ``previous`` recorded (unless ``retrust``)."""
    recorded = {name: download["sha256"] for name, download in (previous or {}).get("downloads", {}).items()}

    def announce(url: str) -> None:
        report(f"downloading {url}\n  into {target}")

    with atomic_directory(target, may_replace=lambda path: (path / RECORD_NAME).is_file()) as folder:
        downloads = {}
        for file in entry.files:
            if previous is not None and not retrust and not file.sha256 and file.name not in recorded:
                raise CacheError(
                    f"{target / RECORD_NAME} records no digest of {file.name}, which the catalog entry now lists "
                    f"(the entry changed since the first download); {retrust_hint(target)}"
                )
            expected = file.sha256 or (None if retrust else recorded.get(file.name))
            origin = (
                "published"
                if file.sha256
                else f"recorded at the first download; if it changed on purpose: {DOWNLOAD_COMMAND} {entry.name} "
                f"{RETRUST} accepts the new one"
            )
            staging = folder / STAGING if file.unpack else folder
            url, path, digest = _download_file(file, staging, expected, origin, progressbar, announce)
            check = PUBLISHED if file.sha256 else (PREFIX if file.sha256_prefix else TRUSTED)
            downloads[file.name] = {"url": url, "bytes": path.stat().st_size, "sha256": digest, "check": check}
            if retrust and recorded.get(file.name, digest) != digest:
                report(f"{entry.name}: {file.name} is now trusted as SHA-256 {digest} (was {recorded[file.name]})")
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
    cap = file.bytes if file.bytes is not None else byte_limit(MAX_BYTES_ENV)
    downloader = BoundedDownloader(cap, published=file.bytes is not None, progressbar=progressbar)
    failures = []
    for url in file.urls:
        announce(url)
        try:
            path = Path(pooch.retrieve(url, known_hash=None, fname=file.name, path=folder, downloader=downloader))
        except Exception as error:  # pooch and requests raise many types; each becomes one cause
            failures.append(f"{url}: {_cause(error)}")
            continue
        digest = file_digest(path)
        mismatch = _published_mismatch(file, path.stat().st_size, digest) or _mismatch(digest, sha256, origin)
        if mismatch is None:
            return url, path, digest
        path.unlink()
        failures.append(f"{url}: {mismatch}")
    raise FetchError(f"could not download {file.name}: " + "; ".join(failures))


def _cause(error: Exception) -> str:
    """The reason a download failed, in a few words."""
    import requests

    if isinstance(error, ContextualError):  # a limit: its own words
        return str(error)
    if isinstance(error, requests.HTTPError) and error.response is not None:
        return f"HTTP {error.response.status_code} {error.response.reason}".rstrip()
    timed_out = f"timed out (no data for {limit(TIMEOUT_ENV):g} s; {TIMEOUT_ENV} sets the limit)"
    if isinstance(error, requests.Timeout) or "timed out" in str(error).lower():  # mid-file: a ConnectionError
        return timed_out
    if isinstance(error, requests.exceptions.SSLError):
        return "the TLS connection failed (the server's certificate or handshake; is the clock right?)"
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
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return f"{type(error).__name__}: {error}"[:200]


def _mismatch(digest: str, expected: str | None, origin: str) -> str | None:
    """The computed SHA-256 against the expected one (published, or recorded at the first download)."""
    if expected is None or digest == expected:
        return None
    return f"wrong SHA-256 {digest}, expected {expected} ({origin}): the file is corrupted or is not the expected one"


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
