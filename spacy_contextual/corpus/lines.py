"""A text corpus for embedding: one whitespace-tokenised sentence per line, plain or gzip, UTF-8.

Line i of the file is sentence i, a blank line an empty sentence. A line ends at "\\n", "\\r\\n" or a
lone "\\r", as in the universal-newlines text mode AllenNLP's reader opens the file with. Lines are
decoded by ``text_files`` (an invalid UTF-8 byte is an error naming FILE:LINE, ``errors="replace"``
reads such bytes as U+FFFD instead; a byte-order mark at the start is not part of the first word).
``shard(rank, world_size)`` yields the lines i with i mod world_size == rank, the share of one
process when the corpus is split between several. Nothing is held beyond the current line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..text_files import ERROR_MODES, InputFileError, decode_line, raw_lines

ERRORS_FIX = "fix the file, or pass --errors replace to read such bytes as U+FFFD"


@dataclass(frozen=True)
class Corpus:
    path: Path
    errors: str = "strict"

    def __post_init__(self) -> None:
        if self.errors not in ERROR_MODES:
            raise InputFileError(f"errors must be one of {', '.join(ERROR_MODES)}, got {self.errors!r}")

    def raw_lines(self) -> Iterator[bytes]:
        """Every line's bytes, its line end included."""
        for piece in raw_lines(self.path):  # split at "\n": a "\r\n" is never cut in two
            yield from piece.splitlines(keepends=True)  # bytes split at "\n", "\r\n" and "\r" alone

    def decode(self, raw: bytes, number: int) -> str:
        """Line ``number`` (from 1), decoded, without its line end."""
        return decode_line(raw, self.path, number, self.errors, ERRORS_FIX)

    def lines(self) -> Iterator[str]:
        """Every line, decoded, without its line end."""
        for index, raw in enumerate(self.raw_lines()):
            yield self.decode(raw, index + 1)

    def count(self) -> int:
        """The number of lines, every one checked to decode (so a bad byte stops a run before it starts)."""
        return sum(1 for _ in self.lines())

    def shard(self, rank: int = 0, world_size: int = 1, skip: int = 0) -> Iterator[tuple[int, bytes, list[str]]]:
        """(line index, its bytes, its tokens) of the lines i with i mod world_size == rank, after the
        first ``skip`` of them; the other ranks' lines are not decoded."""
        first = rank + skip * world_size
        for index, raw in enumerate(self.raw_lines()):
            if index >= first and index % world_size == rank:
                yield index, raw, self.decode(raw, index + 1).split()
