"""Text input files (plain, or gzip whatever the name): numbered lines, and JSONL records.

Bytes that are not UTF-8 are an error naming ``file:line`` (``errors="replace"`` puts U+FFFD in
their place instead); a truncated gzip file is an error naming the file; a JSONL line that is not a
JSON object is an error naming ``file:line``; a JSON file that cannot be parsed, or nests more than
``MAX_JSON_DEPTH`` levels (never a ``RecursionError``), is an error naming the file and the position.
Nothing is skipped silently except blank JSONL lines.

Bounded before they allocate:

* gzip is read by ``Gunzip``, member after member as the bytes stream in, in time linear in the input
  however many members it holds (even empty ones: each is fed in pieces that start small, so what one
  member leaves unread is never copied more than a few times); a caller can cap the members
  (``max_members``) and the expanded bytes (``bounded_lines``) as they are counted.
* ``bounded_lines`` yields the lines of a file or an upload while counting them (blank ones too) and
  their bytes, and refuses the line past ``max_lines``, a line longer than ``max_line_bytes`` and the
  byte past ``max_bytes`` before reading on, so memory stays near one line whatever the file expands to.
* Every JSON integer is checked by its length before ``int()`` sees it (``loads``): one of more than
  ``MAX_INTEGER_DIGITS`` digits is one line naming where it is, not Python's 4,300-digit ``ValueError``.
"""

from __future__ import annotations

import io
import json
import re
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
MAX_INTEGER_DIGITS = 40  # no count, size, seed or id of ours needs more (2**64 has 20 digits)
UTF8_FIX = "re-encode the file as UTF-8"
READ_BYTES = 1 << 16  # compressed bytes read at a time, and the most output one step of a member gives
FIRST_FEED = 256  # compressed bytes a gzip member is first fed; the piece doubles up to READ_BYTES


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


class Gunzip(io.RawIOBase):
    """The decompressed bytes of the gzip stream ``source`` (one member or several), read as they are
    asked for; a damaged or truncated stream raises ``InputFileError`` naming ``what``, and so does a
    member past ``max_members``."""

    def __init__(self, source: IO[bytes], what: str, max_members: int | None = None):
        super().__init__()
        self.source, self.what, self.max_members = source, what, max_members
        self.buffer, self.start = b"", 0  # compressed bytes read and not yet used: buffer[start:]
        self.members, self.stream, self.piece = 0, None, FIRST_FEED
        self.output, self.position = b"", 0  # decompressed bytes not yet handed out: output[position:]

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        while self.position >= len(self.output):
            if not self._step():
                return 0
        size = min(len(target), len(self.output) - self.position)
        target[:size] = self.output[self.position : self.position + size]
        self.position += size
        return size

    def _step(self) -> bool:
        """Decompress the next piece into ``output``; False at the end of the last member."""
        if self.start >= len(self.buffer) and not self._refill():
            if self.stream is not None:
                raise InputFileError(
                    f"{self.what}: the gzip data cannot be read (it ends inside a member); the file is truncated or "
                    "damaged"
                )
            return False
        if self.stream is None:
            self.members += 1
            if self.max_members is not None and self.members > self.max_members:
                raise InputFileError(
                    f"{self.what} holds more than {self.max_members:,} gzip members (compressed pieces); "
                    "compress it again as one"
                )
            self.stream, self.piece = zlib.decompressobj(16 + zlib.MAX_WBITS), FIRST_FEED
        fed = memoryview(self.buffer)[self.start : self.start + self.piece]
        try:
            self.output = self.stream.decompress(fed, READ_BYTES)
        except zlib.error as error:
            raise InputFileError(
                f"{self.what}: the gzip data cannot be read ({error}); the file is truncated or damaged"
            ) from None
        self.position = 0
        self.start += len(fed) - len(self.stream.unconsumed_tail) - len(self.stream.unused_data)
        self.piece = min(2 * self.piece, READ_BYTES)
        if self.stream.eof:
            self.stream = None
        return True

    def _refill(self) -> bool:
        self.buffer, self.start = self.source.read(READ_BYTES), 0
        return bool(self.buffer)

    def close(self) -> None:
        self.source.close()
        super().close()


def binary_stream(source: IO[bytes], what: str, max_members: int | None = None) -> IO[bytes]:
    """``source``'s bytes, decompressed when they start with the gzip magic number (whatever the name)."""
    buffered = source if hasattr(source, "peek") else io.BufferedReader(source)
    if buffered.peek(2)[:2] != GZIP_MAGIC:
        return buffered
    return io.BufferedReader(Gunzip(buffered, what, max_members), READ_BYTES)


def open_binary(path: PathLike, max_members: int | None = None) -> IO[bytes]:
    """The file's bytes, decompressed when it starts with the gzip magic number (whatever its name)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; give a text file")
    note_read(path)
    return binary_stream(path.open("rb"), str(path), max_members)


def raw_lines(path: PathLike) -> Iterator[bytes]:
    """Every line of ``path`` as bytes, line break included."""
    with open_binary(path) as handle:
        yield from handle


def bounded_lines(
    source: PathLike | bytes,
    what: str,
    max_lines: int,
    max_bytes: int,
    max_line_bytes: int,
    max_members: int | None = None,
) -> Iterator[tuple[int, bytes]]:
    """(line number from 1, line) of a file or of an upload's bytes (gzip or plain), refused
    (``InputFileError``) at the line past ``max_lines`` (blank ones count), at a line longer than
    ``max_line_bytes``, at the byte past ``max_bytes`` of what the data expands to, and at the gzip
    member past ``max_members``, each before more is read."""
    if isinstance(source, bytes):
        handle = binary_stream(io.BytesIO(source), what, max_members)
    else:
        handle = open_binary(source, max_members)
    total = 0
    with handle:
        for number in range(1, max_lines + 2):
            line = handle.readline(max_line_bytes + 1)
            if not line:
                return
            total += len(line)
            if number > max_lines:
                raise InputFileError(f"{what} has more than {max_lines:,} lines; the limit is {max_lines:,}: split it")
            if total > max_bytes:
                raise InputFileError(f"{what} expands to more than {max_bytes:,} bytes (the limit); split it")
            if len(line) > max_line_bytes:
                raise InputFileError(
                    f"{what}: line {number:,} is longer than {max_line_bytes:,} bytes (the limit); split it"
                )
            yield number, line


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
        text = raw.decode("utf-8-sig")
        document = loads(text)
    except UnicodeDecodeError as err:
        where = f"byte {raw[err.start]:#04x} at offset {err.start} is not UTF-8"
    except json.JSONDecodeError as err:
        where = f"{err.msg} at line {err.lineno} column {err.colno}"
    except LongInteger as err:
        where = f"{err} at {long_integer_position(text)}"
    except RecursionError:
        where = f"nested more than {MAX_JSON_DEPTH} levels deep"
    else:
        if not nested_deeper_than(document, MAX_JSON_DEPTH):
            return document
        where = f"nested more than {MAX_JSON_DEPTH} levels deep"
    raise error(f"{path} is not valid JSON ({where}); {fix}") from None


class LongInteger(ContextualError):
    """A JSON integer with more digits than any value of ours has."""


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        raise LongInteger(f"an integer of {digits:,} digits (at most {MAX_INTEGER_DIGITS})")
    return int(text)


def loads(text: str) -> Any:
    """``json.loads``, every integer checked by its length before it is converted (``LongInteger``)."""
    return json.loads(text, parse_int=_bounded_int)


def long_integer_position(text: str) -> str:
    """ "line L column C" of the first run of more than ``MAX_INTEGER_DIGITS`` digits in ``text``."""
    found = re.search(rf"\d{{{MAX_INTEGER_DIGITS + 1},}}", text)
    if found is None:
        return "an unknown position"
    line = text.count("\n", 0, found.start()) + 1
    return f"line {line} column {found.start() - text.rfind(chr(10), 0, found.start())}"


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
            record = loads(line)
        except json.JSONDecodeError as error:
            raise InputFileError(f"{path}:{number}: not JSON ({error.msg} at column {error.colno})") from None
        except LongInteger as error:
            raise InputFileError(f"{path}:{number}: {error}, at {long_integer_position(line)}") from None
        if not isinstance(record, dict):
            raise InputFileError(f"{path}:{number}: a JSON {type(record).__name__}, not an object")
        yield number, record
