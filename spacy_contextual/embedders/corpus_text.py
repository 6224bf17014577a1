"""A text corpus for embedding: one whitespace-tokenised sentence per line, plain or gzip, UTF-8.

A line ends at "\\n" (a "\\r" before it is whitespace and goes with the split); line i of the file is
sentence i, a blank line an empty sentence. Every line is decoded on its own, so an invalid UTF-8
byte is reported as FILE:LINE; ``errors="replace"`` reads such bytes as U+FFFD instead. A byte-order
mark at the start of the file is not part of the first word. ``shard(rank, world_size)`` yields the
lines i with i mod world_size == rank, the share of one process when the corpus is split between
several. Nothing is held beyond the current line.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import ContextualError

GZIP_MAGIC = b"\x1f\x8b"
BYTE_ORDER_MARK = "\ufeff"
ERROR_MODES = ("strict", "replace")


class CorpusError(ContextualError):
    """The corpus cannot be read as UTF-8 text lines."""


@dataclass(frozen=True)
class Corpus:
    path: Path
    errors: str = "strict"

    def __post_init__(self) -> None:
        if self.errors not in ERROR_MODES:
            raise CorpusError(f"errors must be one of {', '.join(ERROR_MODES)}, got {self.errors!r}")

    def open(self) -> BinaryIO:
        """The file's bytes, decompressed when it starts with the gzip magic number."""
        handle = Path(self.path).open("rb")
        if handle.peek(2)[:2] != GZIP_MAGIC:
            return handle
        handle.close()
        return gzip.open(self.path, "rb")  # type: ignore[return-value]

    def lines(self) -> Iterator[str]:
        """Every line, decoded, without its line break."""
        with self.open() as handle:
            for number, raw in enumerate(self._raw_lines(handle), 1):
                yield self._decode(raw, number)

    def count(self) -> int:
        """The number of lines, every one checked to decode (so a bad byte stops a run before it starts)."""
        return sum(1 for _ in self.lines())

    def shard(self, rank: int = 0, world_size: int = 1, skip: int = 0) -> Iterator[tuple[int, list[str]]]:
        """(line index, tokens) of the lines i with i mod world_size == rank, after the first ``skip`` of them."""
        first = rank + skip * world_size
        with self.open() as handle:
            for index, raw in enumerate(self._raw_lines(handle)):
                if index >= first and index % world_size == rank:
                    yield index, self._decode(raw, index + 1).split()

    def _raw_lines(self, handle: BinaryIO) -> Iterator[bytes]:
        try:
            yield from handle
        except (OSError, EOFError, zlib.error) as error:
            raise CorpusError(f"{self.path}: cannot be read ({error}); is the gzip file complete?") from error

    def _decode(self, raw: bytes, number: int) -> str:
        try:
            text = raw.decode("utf-8", errors=self.errors)
        except UnicodeDecodeError as error:
            raise CorpusError(
                f"{self.path}:{number}: invalid UTF-8 at byte {error.start + 1} of the line "
                f"({raw[error.start : error.end]!r}); fix the file, or pass --errors replace to read such "
                "bytes as U+FFFD"
            ) from None
        if number == 1:
            text = text.removeprefix(BYTE_ORDER_MARK)
        return text.rstrip("\n")
