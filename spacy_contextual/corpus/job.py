"""Embed a whole corpus into HDF5 in the layout of ``allennlp elmo``: in one process, or shared
between the ranks torchrun starts; resumable after a kill.

Rank r of w embeds the lines i with i mod w == r, ``batch_size * CHUNK_BATCHES`` lines at a time: the
chunk the embedder sorts by length and batches (``Embedder.iter_embed``). Each chunk is committed as
one part (``parts``), so a rerun skips the parts on disk and batches the rest exactly as an
uninterrupted run would: the same numbers. Embedding is stateless, so a line's vectors do not depend
on which rank embeds it; a stateful encoder carries its LSTM state from line to line, so it runs in
one process and starts over instead of resuming. When every share is complete (a barrier), rank 0
writes OUTPUT. Rank 0's progress bar counts all ranks: its own batches as they finish, the other
ranks' parts as they appear. Memory does not grow with the corpus: it is read a line at a time, and
at most one chunk is held.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from itertools import islice
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .. import __version__
from ..batching import default_rows
from ..embedders.embedder import CHUNK_BATCHES, Embedder
from ..errors import ContextualError
from ..runtime import RankTimeout, Runtime
from ..types import PathLike
from .folder import PartsError, create_parts_folder
from .lines import Corpus
from .parts import PartsFolder
from .rate import WindowRate, describe_rate

LAYER_CHOICES = ("all", "top", "average")
POLL_SECONDS = 1.0
# Ranks that finish their share first wait for the others. Shares interleave, so they end close
# together, but a resumed rank may have much more left than the rest.
SHARE_TIMEOUT = timedelta(hours=24)


def check_layer_choice(choice: str) -> None:
    if choice not in LAYER_CHOICES:
        raise ContextualError(f"layers must be one of {', '.join(LAYER_CHOICES)}, got {choice!r}")


def select_layers(layers: np.ndarray, choice: str) -> np.ndarray:
    """What OUTPUT stores of (n_layers, n, width): all of it, the top layer, or the mean of the layers."""
    check_layer_choice(choice)
    if choice == "all":
        selected = layers
    elif choice == "top":
        selected = layers[-1]
    else:
        selected = layers.mean(axis=0)
    return np.ascontiguousarray(selected, dtype=np.float32)


def file_identity(path: PathLike) -> list:
    """[name, bytes, mtime in ns] of a file, or of each file in a directory: what a run was made from."""
    path = Path(path)
    if path.is_dir():
        return [file_identity(child) for child in sorted(path.iterdir()) if child.is_file()]
    stat = path.stat()
    return [path.name, stat.st_size, stat.st_mtime_ns]


def embed_corpus(
    embedder: Embedder,
    corpus: Corpus,
    output: PathLike,
    layers: str = "all",
    *,
    encoder: dict,
    batch_size: int | None = None,
    merge: bool | None = None,
    keep_sentences: bool = True,
    runtime: Runtime | None = None,
    total: int | None = None,
    input_identity: list | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> int:
    """Embed every line of ``corpus`` into ``output``; returns the number of lines.

    ``encoder`` describes the model (kind, files, settings) for the record of the run: parts made
    with another are refused. ``merge`` copies the parts into ``output`` (default with one process);
    otherwise ``output`` holds virtual datasets over them. ``total`` is the corpus's line count when
    the caller has counted (and so checked) it already; ``input_identity`` what identifies its text
    (default: name, size and mtime of the file)."""
    runtime = runtime or Runtime()
    if embedder.keep_order and runtime.world_size > 1:
        raise ContextualError(
            "a stateful encoder carries its LSTM state from line to line, so it cannot share a corpus between "
            "processes; run it in one process, or leave out --stateful"
        )
    check_layer_choice(layers)
    batch_size = batch_size or default_rows(embedder.keep_order)
    started = os.stat(corpus.path)
    total = corpus.count() if total is None else total
    parts = PartsFolder(Path(output), runtime.world_size, batch_size * CHUNK_BATCHES)
    settings = {
        "package": __version__,
        "encoder": encoder,
        "input": input_identity or file_identity(corpus.path),
        "lines": total,
        "errors": corpus.errors,
        "layers": layers,
        "batch_size": batch_size,
        "max_batch_tokens": embedder.max_batch_tokens,
        "part_lines": parts.part_lines,
        "processes": runtime.world_size,
    }
    if runtime.main:
        create_parts_folder(parts.output)
        parts.check_run(settings)
        parts.record_run(settings)
    runtime.barrier("the start of the run")
    with parts.lock(runtime.rank):
        done = parts.resume(runtime.rank, log)
        if done and embedder.keep_order:
            log(f"{parts.folder}: a stateful encoder cannot continue where it stopped; starting over")
            parts.discard(runtime.rank)
            done = []
        bar = RunProgress(parts, total, str(encoder.get("kind", "embed"))) if runtime.main and progress else None
        try:
            shard = corpus.shard(runtime.rank, runtime.world_size, skip=sum(part.lines for part in done))
            for number, chunk in enumerate(_chunks(shard, parts.part_lines), start=len(done)):
                indices, raws, sentences = zip(*chunk, strict=True)
                arrays = embedder.iter_embed(sentences, batch_size, CHUNK_BATCHES, bar.add if bar else None)
                selected = [select_layers(array, layers) for array in arrays]
                parts.write_part(
                    runtime.rank, number, indices, selected, raws, check_unchanged(corpus.path, started, parts)
                )
            if bar:
                bar.wait_for_all()
        finally:
            if bar:
                bar.bar.close()  # so that any message after it starts on a line of its own
        runtime.barrier("the end of its share", SHARE_TIMEOUT)
        if runtime.main:
            item_shape = (embedder.num_layers, embedder.output_dim) if layers == "all" else (embedder.output_dim,)
            merge = runtime.world_size == 1 if merge is None else merge
            parts.write_output(corpus, total, item_shape, merge, keep_sentences)
    return total


def check_unchanged(path: Path, started: os.stat_result, parts: PartsFolder) -> os.stat_result:
    """INPUT's status now, refused when its size, mtime or file differ from those at the start of the run."""
    now = os.stat(path)
    fields = ("st_dev", "st_ino", "st_size", "st_mtime_ns")
    if any(getattr(now, name) != getattr(started, name) for name in fields):
        raise PartsError(
            f"INPUT {path} changed while it was embedded (its size, mtime or file is not what it was when the run "
            f"started), so nothing was written; delete {parts.folder} and run again once INPUT stays as it is"
        )
    return now


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


class RunProgress:
    """Rank 0's bar over every rank: sentences, and one current rate (``rate.py``): sentences/s and
    tokens/s over the same recent window, and the time left at that rate."""

    BAR_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"  # tqdm's own rate left out

    def __init__(self, parts: PartsFolder, total: int, name: str):
        self.parts, self.total = parts, total
        self.committed = [parts.committed(rank) if rank == 0 else [] for rank in range(parts.world_size)]
        self.shares = [parts.share_size(rank, total) for rank in range(parts.world_size)]
        initial = sum(p.lines for ps in self.committed for p in ps)
        self.bar = tqdm(total=total, initial=initial, unit="sent", desc=name, bar_format=self.BAR_FORMAT)
        self.polled = self.progressed = time.monotonic()
        self.rate = WindowRate(self.polled)
        self.poll()

    def add(self, sentences: int, tokens: int) -> None:
        """Rank 0's own batch is done; look for the other ranks' new parts now and then."""
        self._advance(sentences, tokens)
        if time.monotonic() - self.polled >= POLL_SECONDS:
            self.poll()

    def poll(self) -> None:
        self.polled = time.monotonic()
        for rank in range(1, self.parts.world_size):
            while (path := self.parts.part_path(rank, len(self.committed[rank]))).is_file():
                try:
                    part = self.parts.summary(path)
                except (OSError, KeyError):  # being checked or replaced by its rank: look again later
                    break
                self.committed[rank].append(part)
                self.progressed = self.polled
                self._advance(part.lines, part.tokens)

    def wait_for_all(self) -> None:
        """Rank 0 has embedded its share: follow the others' until they are complete, then close; a rank
        that commits no part for ``SHARE_TIMEOUT`` is named."""
        while behind := [
            r for r in range(1, len(self.shares)) if sum(p.lines for p in self.committed[r]) < self.shares[r]
        ]:
            if time.monotonic() - self.progressed > SHARE_TIMEOUT.total_seconds():
                raise RankTimeout(
                    f"rank {', '.join(map(str, behind))} committed no part for {SHARE_TIMEOUT}; it hangs or died: "
                    "stop the run and rerun the same command to continue"
                )
            time.sleep(POLL_SECONDS)
            self.poll()
        self.bar.close()

    def _advance(self, sentences: int, tokens: int) -> None:
        """The rate including these sentences, set before the bar moves, so that both show together."""
        self.rate.add(time.monotonic(), sentences, tokens)
        left = self.total - self.bar.n - sentences
        self.bar.set_postfix_str(describe_rate(*self.rate.rates(), left), refresh=False)
        self.bar.update(sentences)
