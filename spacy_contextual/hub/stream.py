"""One file of a download, its limits enforced while the bytes arrive: the downloader that ``fetch.py``
hands to pooch (``downloader(url, output_file, pooch)``), over requests for ``http(s)://`` and a plain
copy for ``file://``.

* Size: at most ``cap`` bytes, the catalog's published size or else ``SPACY_CONTEXTUAL_MAX_DOWNLOAD_BYTES``
  (``limits.py``). A larger ``Content-Length`` is refused before the body is read; a body that goes on
  is cut as soon as it passes the cap, so no more than ``cap`` bytes ever reach the disk.
* Encoding: the request asks for ``Accept-Encoding: identity`` and the body is stored exactly as it is
  sent, never decompressed: a server that compresses anyway gives a file that fails its size or digest
  check, never one larger than the cap.
* Time: ``SPACY_CONTEXTUAL_TIMEOUT`` bounds each wait for bytes; ``SPACY_CONTEXTUAL_DOWNLOAD_DEADLINE``
  the whole file, connection and headers included (``deadline.py``: a trickle is stopped on time).
* The file gets the permissions the umask gives (0644 under 0022), not the private mode of pooch's
  temporary file.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

from ..errors import ContextualError
from ..text_files import MAX_INTEGER_DIGITS
from ..writer import apply_umask
from .deadline import Deadline, deadline_session
from .limits import DEADLINE_ENV, MAX_BYTES_ENV, TIMEOUT_ENV, limit

CHUNK = 1 << 16
SCHEMES = ("http", "https", "file")


class DownloadLimit(ContextualError):
    """A download refused or stopped by one of its limits: the scheme, the kind of source, the size, the time."""


@dataclass(frozen=True)
class BoundedDownloader:
    cap: int  # the most bytes the file may have
    published: bool  # the cap is the catalog's published size (else the ceiling of MAX_BYTES_ENV)
    progressbar: bool = True

    def __call__(self, url: str, output_file: str, pooch_instance=None) -> None:
        scheme = urlparse(url).scheme
        if scheme not in SCHEMES:
            raise DownloadLimit(f"the scheme {scheme}:// is not downloaded; give an http, https or file URL")
        apply_umask(Path(output_file), directory=False)
        with open(output_file, "wb") as out:
            if scheme == "file":
                self._copy(url, out)
            else:
                self._get(url, out)

    def too_large(self, what: str) -> DownloadLimit:
        """``what`` (e.g. "more than 1,000 bytes arrived") said against the cap, as the error."""
        if self.published:
            return DownloadLimit(f"{what}, but {self.cap:,} are published; stopped there")
        return DownloadLimit(
            f"{what}; {self.cap:,} bytes is the limit for a file whose size the catalog does not publish; stopped "
            f"there (set {MAX_BYTES_ENV} to a larger number of bytes if the file really is that large)"
        )

    def _copy(self, url: str, out) -> None:
        path = url2pathname(urlparse(url).path)
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block, a device never end
            raise DownloadLimit(f"{path} is not a regular file (a device, FIFO or folder); give the URL of a file")
        with open(path, "rb") as source:
            shutil.copyfileobj(_Capped(source, self), out, CHUNK)

    def _get(self, url: str, out) -> None:
        deadline = Deadline(limit(DEADLINE_ENV))
        with deadline_session(deadline) as session, deadline:
            try:
                self._stream(session, url, out)
            except Exception:
                if not deadline.passed:
                    raise
            if deadline.passed:  # its shutdown may also look like the end of a body of no announced length
                raise DownloadLimit(
                    f"not complete after {deadline.seconds:g} s, the deadline for one file; stopped "
                    f"({DEADLINE_ENV} sets the deadline)"
                )

    def _stream(self, session, url: str, out) -> None:
        import requests
        import urllib3

        timeout = limit(TIMEOUT_ENV)
        headers = {"Accept-Encoding": "identity"}
        with session.get(url, stream=True, timeout=(timeout, timeout), headers=headers) as response:
            response.raise_for_status()
            header = response.headers.get("Content-Length", "").strip()
            digits = header.isascii() and header.isdigit()
            if digits and len(header) > MAX_INTEGER_DIGITS:  # counted before int() reads thousands of digits
                raise self.too_large(f"the server announces a size of {len(header):,} digits")
            announced = int(header) if digits else None
            if announced is not None and announced > self.cap:
                raise self.too_large(f"the server announces {announced:,} bytes")
            progress = _progress(announced, self.progressbar)
            received = 0
            try:
                while chunk := _read(response.raw, requests, urllib3):
                    received += len(chunk)
                    if received > self.cap:
                        raise self.too_large(f"more than {self.cap:,} bytes arrived")
                    out.write(chunk)
                    progress.update(len(chunk))
            finally:
                progress.close()


def _read(raw, requests, urllib3) -> bytes:
    """The bytes that have arrived (at most ``CHUNK``), as sent; a timeout or a dropped connection raises
    what requests raises for them."""
    try:
        return raw.read1(CHUNK, decode_content=False)
    except urllib3.exceptions.ReadTimeoutError as error:
        raise requests.exceptions.ReadTimeout(error) from None
    except (urllib3.exceptions.ProtocolError, urllib3.exceptions.HTTPError) as error:
        raise requests.exceptions.ChunkedEncodingError(error) from None


class _Capped:
    """A file object that refuses to read past ``downloader.cap`` bytes."""

    def __init__(self, source, downloader: BoundedDownloader):
        self.source, self.downloader, self.read_bytes = source, downloader, 0

    def read(self, size: int) -> bytes:
        data = self.source.read(size)
        self.read_bytes += len(data)
        if self.read_bytes > self.downloader.cap:
            raise self.downloader.too_large(f"the file has more than {self.downloader.cap:,} bytes")
        return data


class _NoProgress:
    def update(self, _: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int | None, show: bool):
    if not show:
        return _NoProgress()
    from tqdm import tqdm

    return tqdm(total=total, ncols=79, unit="B", unit_scale=True, leave=True)
