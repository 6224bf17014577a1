"""A text corpus for embedding: one whitespace-tokenised sentence per line, plain or gzip, UTF-8.

Line i of the file is sentence i, a blank line an empty sentence; lines are read and decoded by
``text_files`` (an invalid UTF-8 byte is an error naming FILE:LINE, ``errors="replace"`` reads such
bytes as U+FFFD instead; a byte-order mark at the start is not part of the first word).
``shard(rank, world_size)`` yields the lines i with i mod world_size == rank, the share of one
process when the corpus is split between several. Nothing is held beyond the current line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..text_files import ERROR_MODES, InputFileError, decode_line, numbered_lines, raw_lines

ERRORS_FIX = "fix the file, or pass --errors replace to read such bytes as U+FFFD"


@dataclass(frozen=True)
class Corpus:
    path: Path
    errors: str = "strict"

    def __post_init__(self) -> None:
        if self.errors not in ERROR_MODES:
            raise InputFileError(f"errors must be one of {', '.join(ERROR_MODES)}, got {self.errors!r}")

    def lines(self) -> Iterator[str]:
        """Every line, decoded, without its line break."""
        for _, line in numbered_lines(self.path, self.errors, ERRORS_FIX):
            yield line

    def count(self) -> int:
        """The number of lines, every one checked to decode (so a bad byte stops a run before it starts)."""
        return sum(1 for _ in self.lines())

    def shard(self, rank: int = 0, world_size: int = 1, skip: int = 0) -> Iterator[tuple[int, list[str]]]:
        """(line index, tokens) of the lines i with i mod world_size == rank, after the first ``skip`` of them;
        the other ranks' lines are not decoded."""
        first = rank + skip * world_size
        for index, raw in enumerate(raw_lines(self.path)):
            if index >= first and index % world_size == rank:
                yield index, decode_line(raw, self.path, index + 1, self.errors, ERRORS_FIX).split()
