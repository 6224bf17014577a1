"""Streaming a tokenised corpus (one sentence per line, tokens separated by spaces; ``.gz`` too)
and cutting it into training batches, in one of two ways:

* ``BatchStream``: length-sorted sentence batches (each sentence from zero LSTM state). Sentences
  are read ``chunk_sentences`` at a time; each chunk is sorted by length, cut into batches of at
  most ``batch_tokens`` tokens (boundaries included), and the batch order within the chunk is
  shuffled by a generator seeded from (seed, epoch, chunk). Position: (epoch, chunk, batch).
* ``WindowStream``: truncated BPTT over a continuous token stream (bilm-tf): windows of
  ``bptt_steps`` tokens on ``batch_tokens // bptt_steps`` parallel rows, the LSTM state carried
  from one window to the next. Position: (epoch, 0, windows consumed in the epoch).

Nothing is loaded whole, and a position is all a checkpoint stores.

For DDP, rank r of w reads lines r, r+w, r+2w, ... of every file (its own shard).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..errors import ContextualError
from ..models.chars import BOS_TOKEN, EOS_TOKEN
from ..text_files import numbered_lines
from ..types import PathLike


def iter_sentences(path: PathLike, rank: int = 0, world_size: int = 1) -> Iterator[list[str]]:
    """Tokenised sentences of one file, skipping blank lines; rank ``rank`` of ``world_size`` gets
    every ``world_size``-th non-blank line."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    index = 0
    for _, line in numbered_lines(path):
        tokens = line.split()
        if not tokens:
            continue
        if index % world_size == rank:
            yield tokens
        index += 1


def iter_chunks(
    paths: Sequence[Path], chunk_sentences: int, rank: int = 0, world_size: int = 1
) -> Iterator[list[list[str]]]:
    """The sentences of ``paths`` (this rank's shard), ``chunk_sentences`` at a time."""
    chunk: list[list[str]] = []
    for path in paths:
        for sentence in iter_sentences(path, rank, world_size):
            chunk.append(sentence)
            if len(chunk) == chunk_sentences:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


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
            raise ContextualError(f"batch_tokens must be at least 4, got {batch_tokens}")
        self.paths = [Path(p) for p in paths]
        self.batch_tokens = batch_tokens
        self.chunk_sentences = chunk_sentences
        self.seed = seed
        self.rank, self.world_size = rank, world_size

    def _chunks(self) -> Iterator[list[list[str]]]:
        return iter_chunks(self.paths, self.chunk_sentences, self.rank, self.world_size)

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
                raise ContextualError(f"no sentences in {[str(p) for p in self.paths]} for rank {self.rank}")
            epoch += 1


class Windows(NamedTuple):
    """One TBPTT batch: ``rows`` windows of ``bptt_steps + 1`` tokens of the forward stream and of the
    backward stream (consecutive windows of a row overlap by one token: the last target of window i
    is the first input of window i + 1)."""

    forward: list[list[str]]
    backward: list[list[str]]


class WindowStream:
    """Endless, resumable TBPTT windows over ``paths`` (bilm-tf's ``LMDataset`` batching).

    Each epoch the sentences (shuffled within chunks of ``chunk_sentences`` by a generator seeded
    from (seed, epoch, chunk)) are dealt to ``rows`` parallel streams, each to the row with the
    least text buffered. A sentence adds ``<S> w_1 .. w_N </S>`` to its row's forward stream and
    ``</S> w_N .. w_1 <S>`` to its backward stream (the backward LM reads every sentence right to
    left; sentence order stays as dealt, as in bilm-tf). The epoch ends when a row runs dry.
    """

    def __init__(
        self,
        paths: Sequence[PathLike],
        batch_tokens: int,
        bptt_steps: int = 20,
        chunk_sentences: int = 10000,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ):
        if bptt_steps < 1 or batch_tokens < bptt_steps:
            raise ContextualError(
                f"need 1 <= bptt_steps <= batch_tokens, got bptt_steps={bptt_steps}, batch_tokens={batch_tokens}"
            )
        self.paths = [Path(p) for p in paths]
        self.rows = batch_tokens // bptt_steps
        self.bptt_steps = bptt_steps
        self.chunk_sentences = chunk_sentences
        self.seed = seed
        self.rank, self.world_size = rank, world_size

    def _sentences(self, epoch: int) -> Iterator[list[str]]:
        for chunk_index, chunk in enumerate(iter_chunks(self.paths, self.chunk_sentences, self.rank, self.world_size)):
            random.Random(f"{self.seed}-{epoch}-{chunk_index}").shuffle(chunk)
            yield from chunk

    def _epoch(self, epoch: int) -> Iterator[Windows]:
        width = self.bptt_steps + 1
        forward: list[list[str]] = [[] for _ in range(self.rows)]
        backward: list[list[str]] = [[] for _ in range(self.rows)]
        sentences = self._sentences(epoch)
        while True:
            while min(len(row) for row in forward) < width:
                sentence = next(sentences, None)
                if sentence is None:
                    return
                row = min(range(self.rows), key=lambda r: len(forward[r]))
                forward[row] += [BOS_TOKEN, *sentence, EOS_TOKEN]
                backward[row] += [EOS_TOKEN, *reversed(sentence), BOS_TOKEN]
            yield Windows([row[:width] for row in forward], [row[:width] for row in backward])
            for row in range(self.rows):
                del forward[row][: self.bptt_steps]
                del backward[row][: self.bptt_steps]

    def __call__(self, start: StreamPosition = StreamPosition()) -> Iterator[tuple[StreamPosition, Windows]]:
        """Yields (position after this batch, windows) from ``start`` on, forever."""
        epoch = start.epoch
        while True:
            first = start.batch if epoch == start.epoch else 0
            found = False
            for index, windows in enumerate(self._epoch(epoch)):
                found = True
                if index >= first:
                    yield StreamPosition(epoch, 0, index + 1), windows
            if not found:
                raise ContextualError(
                    f"{[str(p) for p in self.paths]} (rank {self.rank}) has too little text for {self.rows} rows of "
                    f"{self.bptt_steps + 1}-token windows; lower data.batch_tokens or data.bptt_steps"
                )
            epoch += 1
