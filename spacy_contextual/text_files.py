"""Text input files (plain, or gzip whatever the name): numbered lines, and JSONL records.

Bytes that are not UTF-8 are an error naming ``file:line`` (``errors="replace"`` puts U+FFFD in
their place instead); a truncated gzip file is an error naming the file; a JSONL line that is not a
JSON object is an error naming ``file:line``; a JSON file that cannot be parsed, or nests more than
``MAX_JSON_DEPTH`` levels (never a ``RecursionError``), is an error naming the file and the position.
Nothing is skipped silently except blank JSONL lines.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .errors import ContextualError
from .types import PathLike
from .writer import note_read

GZIP_MAGIC = b"\x1f\x8b"
BYTE_ORDER_MARK = "\ufeff"
ERROR_MODES = ("strict", "replace")
MAX_JSON_DEPTH = 100  # no configuration, record or catalog of ours nests more than a few levels
UTF8_FIX = "re-encode the file as UTF-8"


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
    """The file's bytes, decompressed when it starts with the gzip magic number (whatever its name)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; give a text file")
    note_read(path)
    handle = path.open("rb")
    if handle.peek(2)[:2] != GZIP_MAGIC:
        return handle
    handle.close()
    return gzip.open(path, "rb")


def raw_lines(path: PathLike) -> Iterator[bytes]:
    """Every line of ``path`` as bytes, line break included."""
    try:
        with open_binary(path) as handle:
            yield from handle
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise InputFileError(
            f"{path}: the gzip data cannot be read ({error}); the file is truncated or damaged"
        ) from None


def decode_line(raw: bytes, path: PathLike, number: int, errors: str = "strict", fix: str = UTF8_FIX) -> str:
    """Line ``number`` (from 1) of ``path``, decoded, without its line break or a leading byte-order mark."""
    try:
        text = raw.decode("utf-8", errors=errors)
    except UnicodeDecodeError as error:
        raise InputFileError(
            f"{path}:{number}: not UTF-8 text (byte {raw[error.start]:#04x} at column {error.start + 1}); {fix}"
        ) from None
    if number == 1:
        text = text.removeprefix(BYTE_ORDER_MARK)
    return text.rstrip("\r\n")


def numbered_lines(path: PathLike, errors: str = "strict", fix: str = UTF8_FIX) -> Iterator[tuple[int, str]]:
    """(line number from 1, decoded line) for every line of ``path``."""
    if errors not in ERROR_MODES:
        raise ValueError(f"errors must be one of {', '.join(ERROR_MODES)}, got {errors!r}")
    for number, raw in enumerate(raw_lines(path), start=1):
        yield number, decode_line(raw, path, number, errors, fix)


def read_json(path: PathLike, fix: str, error: type[ContextualError] = InputFileError) -> Any:
    """The parsed JSON file ``path`` (a leading byte-order mark is allowed). Bytes that are not UTF-8,
    text that is not JSON, or arrays and objects nested more than ``MAX_JSON_DEPTH`` deep raise ``error``:
    "FILE is not valid JSON (what, where); ``fix``"."""
    raw = Path(path).read_bytes()
    try:
        document = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as err:
        where = f"byte {raw[err.start]:#04x} at offset {err.start} is not UTF-8"
    except json.JSONDecodeError as err:
        where = f"{err.msg} at line {err.lineno} column {err.colno}"
    except RecursionError:
        where = f"nested more than {MAX_JSON_DEPTH} levels deep"
    else:
        if not nested_deeper_than(document, MAX_JSON_DEPTH):
            return document
        where = f"nested more than {MAX_JSON_DEPTH} levels deep"
    raise error(f"{path} is not valid JSON ({where}); {fix}") from None


def nested_deeper_than(document: Any, limit: int) -> bool:
    """Whether arrays and objects in ``document`` nest more than ``limit`` levels (without recursion)."""
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, (dict, list)):
            if depth > limit:
                return True
            pending.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))
    return False


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


def expanded_bytes(data: bytes, limit: int, what: str = "The file") -> bytes:
    """``data``, gunzipped when it starts with the gzip magic number, refused (``InputFileError``) as soon as
    what it expands to passes ``limit`` bytes: a small compressed upload never becomes a huge buffer."""
    if data[:2] != GZIP_MAGIC:
        if len(data) > limit:
            raise InputFileError(f"{what} has {len(data):,} bytes; the limit is {limit:,}: split it")
        return data
    out, pending = bytearray(), data
    while pending:
        stream = zlib.decompressobj(16 + zlib.MAX_WBITS)  # one gzip member; a file may hold several
        try:
            out += stream.decompress(pending, limit + 1 - len(out))
        except zlib.error as error:
            raise InputFileError(f"{what} is not a readable gzip file ({error}); compress it again") from None
        if len(out) > limit:
            raise InputFileError(f"{what} expands to more than {limit:,} bytes (the limit); split it")
        if not stream.eof:
            raise InputFileError(f"{what} is a truncated gzip file; compress it again")
        pending = stream.unused_data
    return bytes(out)
