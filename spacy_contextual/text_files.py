"""Text input files (plain, or gzip when the name ends in ``.gz``): numbered lines, and JSONL records.

Bytes that are not UTF-8 are an error naming ``file:line`` (``errors="replace"`` puts U+FFFD in
their place instead); a truncated gzip file is an error naming the file; a JSONL line that is not a
JSON object is an error naming ``file:line``. Nothing is skipped silently except blank JSONL lines.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .errors import ContextualError
from .types import PathLike


class InputFileError(ContextualError):
    """An input file that cannot be read as the text (or JSONL) a command expects."""


def is_file(path: PathLike) -> bool:
    """``Path.is_file``, but False (not an OSError) for a path the system cannot look up, e.g. a name too long."""
    try:
        return Path(path).is_file()
    except OSError:
        return False


def is_dir(path: PathLike) -> bool:
    """``Path.is_dir``, but False (not an OSError) for a path the system cannot look up, e.g. a name too long."""
    try:
        return Path(path).is_dir()
    except OSError:
        return False


def open_binary(path: PathLike) -> IO[bytes]:
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; give a text file")
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def numbered_lines(path: PathLike, errors: str = "strict") -> Iterator[tuple[int, str]]:
    """(line number from 1, line without its newline) for every line of ``path``."""
    try:
        with open_binary(path) as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    yield number, raw.decode("utf-8", errors=errors).rstrip("\r\n")
                except UnicodeDecodeError as error:
                    raise InputFileError(
                        f"{path}:{number}: not UTF-8 text (byte {raw[error.start]:#04x} at column {error.start + 1}); "
                        "re-encode the file as UTF-8"
                    ) from None
    except EOFError:
        raise InputFileError(f"{path}: the gzip data ends early; the file is truncated") from None


def read_jsonl(path: PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSON Lines file."""
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputFileError(f"{path}:{number}: not JSON ({error.msg} at column {error.colno})") from None
        if not isinstance(record, dict):
            raise InputFileError(f"{path}:{number}: a JSON {type(record).__name__}, not an object")
        yield number, record
