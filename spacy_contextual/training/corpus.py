"""Streaming a tokenised corpus (one sentence per line, tokens separated by spaces; ``.gz`` too)
and cutting it into length-sorted sentence batches.

Nothing is loaded whole: sentences are read ``chunk_sentences`` at a time; each chunk is sorted by
length, cut into batches of at most ``batch_tokens`` tokens (boundaries included), and the batch
order within the chunk is shuffled by a generator seeded from (seed, epoch, chunk). A position in
the stream is therefore just (epoch, chunk, batch), which is what a checkpoint stores.

For DDP, rank r of w reads lines r, r+w, r+2w, ... of every file (its own shard).
"""

from __future__ import annotations

import gzip
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence, Union

PathLike = Union[str, Path]


def open_text(path: PathLike):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def iter_sentences(path: PathLike, rank: int = 0, world_size: int = 1) -> Iterator[list[str]]:
    """Tokenised sentences of one file, skipping blank lines; rank ``rank`` of ``world_size`` gets
    every ``world_size``-th non-blank line."""
    with open_text(path) as lines:
        index = 0
        for line in lines:
            tokens = line.split()
            if not tokens:
                continue
            if index % world_size == rank:
                yield tokens
            index += 1


@dataclass(frozen=True)
class StreamPosition:
    epoch: int = 0
    chunk: int = 0
    batch: int = 0  # batches of this chunk already consumed


class BatchStream:
    """Endless stream of sentence batches over ``paths`` (epoch after epoch), resumable."""

    def __init__(
        self,
        paths: Sequence[PathLike],
        batch_tokens: int,
        chunk_sentences: int = 10000,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ):
        if batch_tokens < 4:
            raise ValueError(f"batch_tokens must be at least 4, got {batch_tokens}")
        self.paths = [Path(p) for p in paths]
        self.batch_tokens = batch_tokens
        self.chunk_sentences = chunk_sentences
        self.seed = seed
        self.rank, self.world_size = rank, world_size

    def _chunks(self) -> Iterator[list[list[str]]]:
        chunk: list[list[str]] = []
        for path in self.paths:
            for sentence in iter_sentences(path, self.rank, self.world_size):
                chunk.append(sentence)
                if len(chunk) == self.chunk_sentences:
                    yield chunk
                    chunk = []
        if chunk:
            yield chunk

    def chunk_batches(self, chunk: list[list[str]], epoch: int, chunk_index: int) -> list[list[list[str]]]:
        ordered = sorted(chunk, key=len)
        batches, current, width = [], [], 0
        for sentence in ordered:
            width = max(width, len(sentence) + 2)
            if current and width * (len(current) + 1) > self.batch_tokens:
                batches.append(current)
                current, width = [], len(sentence) + 2
            current.append(sentence)
        if current:
            batches.append(current)
        random.Random(f"{self.seed}-{epoch}-{chunk_index}").shuffle(batches)
        return batches

    def __call__(self, start: StreamPosition = StreamPosition()) -> Iterator[tuple[StreamPosition, list[list[str]]]]:
        """Yields (position after this batch, batch) from ``start`` on, forever."""
        epoch = start.epoch
        while True:
            found = False
            for chunk_index, chunk in enumerate(self._chunks()):
                found = True
                if (epoch, chunk_index) < (start.epoch, start.chunk):
                    continue
                batches = self.chunk_batches(chunk, epoch, chunk_index)
                first = start.batch if (epoch, chunk_index) == (start.epoch, start.chunk) else 0
                for b in range(first, len(batches)):
                    yield StreamPosition(epoch, chunk_index, b + 1), batches[b]
            if not found:
                raise ValueError(f"no sentences in {[str(p) for p in self.paths]} for rank {self.rank}")
            epoch += 1
