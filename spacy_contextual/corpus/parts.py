"""Embeddings of a corpus in the HDF5 layout of ``allennlp elmo``, written in resumable parts.

OUTPUT holds one float32 dataset per input line, keyed "0", "1", ...: (n_layers, n, width) for all
layers, (n, width) for one; and ``sentence_to_index``, a one-element string dataset holding the JSON
{sentence: "line index"} (tokens joined by single spaces; a repeated sentence maps to its last line).

While a run goes on, every process (rank r of a world of w) writes into the folder OUTPUT.parts
beside OUTPUT. Line i belongs to rank i mod w; part ``part-RRRRR-SSSSSS.hdf5`` holds the lines of
rank R's share from S * part_lines on (``part_lines`` of them, the last part fewer), as the same
datasets as OUTPUT plus ``line_index`` and ``line_length``. A part is written under a temporary name
and renamed once complete, so the folder only ever holds whole parts: after a kill, a rank continues
after its last whole part and nothing committed is computed again. ``run.json`` records what the
parts were made with (encoder, model and input files, layers, batching, processes); a run with
other settings is refused, not mixed in.

When every share is complete, ``write_output`` makes OUTPUT from the parts: virtual datasets
(HDF5 1.10 or newer reads them) whose source is the part file, named by a path relative to OUTPUT's
folder, so OUTPUT and OUTPUT.parts can move together; or, with ``merge``, a plain copy, after which
the parts are deleted. A virtual dataset whose part is missing reads as NaN, never as plausible
zeros. OUTPUT itself is written under a temporary name and renamed: a reader never sees half of it.
``sentence_to_index`` is streamed to disk, so no step holds the whole input.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from ..errors import ContextualError

RUN_FILE = "run.json"
SENTENCE_INDEX = "sentence_to_index"
LOCK_WAIT_SECONDS = 15.0  # a killed run's processes may take a moment to release their locks
MAX_STRING_BYTES = 2**32 - 1  # HDF5 stores a string type's size in 4 bytes


class PartsError(ContextualError):
    """OUTPUT.parts cannot be continued or assembled as asked."""


@dataclass(frozen=True)
class PartSummary:
    lines: int
    tokens: int


class PartsFolder:
    def __init__(self, output: Path, world_size: int, part_lines: int):
        self.output = Path(output)
        self.folder = self.output.parent / f"{self.output.name}.parts"
        self.world_size = world_size
        self.part_lines = part_lines

    # -- the run the parts belong to ------------------------------------------------------------

    def check_run(self, settings: dict) -> None:
        """Refuse parts made with other settings than ``settings`` (every rank checks for itself)."""
        run_file = self.folder / RUN_FILE
        if not run_file.is_file():
            if self.folder.is_dir() and any(self.folder.glob("part-*.hdf5")):
                raise PartsError(f"{self.folder} holds parts but no {RUN_FILE}; delete the folder to start over")
            return
        recorded = json.loads(run_file.read_text(encoding="utf-8"))
        if recorded != settings:
            changed = sorted(key for key in recorded.keys() | settings.keys() if recorded.get(key) != settings.get(key))
            details = "; ".join(f"{key}: {recorded.get(key)!r} there, {settings.get(key)!r} now" for key in changed)
            raise PartsError(
                f"{self.folder} holds the parts of another run ({details}). Rerun with the same settings to "
                f"continue it, or delete {self.folder} (and any {self.output.name} made from it) to start over"
            )

    def record_run(self, settings: dict) -> None:
        self.folder.mkdir(exist_ok=True)
        _write_atomically(self.folder / RUN_FILE, (json.dumps(settings, indent=1) + "\n").encode("utf-8"))

    # -- one rank's parts -----------------------------------------------------------------------

    def part_path(self, rank: int, number: int) -> Path:
        return self.folder / f"part-{rank:05d}-{number:06d}.hdf5"

    def share_size(self, rank: int, total: int) -> int:
        return len(range(rank, total, self.world_size))

    @contextmanager
    def lock(self, rank: int) -> Iterator[None]:
        """Hold rank's lock (two runs must not write the same parts); leftovers of a killed write go."""
        self.folder.mkdir(exist_ok=True)
        with (self.folder / f"rank-{rank:05d}.lock").open("w") as handle:
            deadline = time.monotonic() + LOCK_WAIT_SECONDS
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise PartsError(
                            f"another process is writing rank {rank}'s parts in {self.folder}; wait for it to end "
                            "or stop it, then rerun"
                        ) from None
                    time.sleep(0.2)
            for leftover in self.folder.glob(f"part-{rank:05d}-*.tmp"):
                leftover.unlink()
            yield

    def committed(self, rank: int) -> list[PartSummary]:
        """Rank's whole parts, in order (the consecutive ones from part 0)."""
        summaries = []
        while (path := self.part_path(rank, len(summaries))).is_file():
            summaries.append(self.summary(path))
        return summaries

    def summary(self, path: Path) -> PartSummary:
        with h5py.File(path, "r") as part:
            lengths = part["line_length"][...]
        return PartSummary(len(lengths), int(lengths.sum()))

    def discard(self, rank: int) -> None:
        for path in self.folder.glob(f"part-{rank:05d}-*.hdf5"):
            path.unlink()

    def write_part(self, rank: int, number: int, indices: Sequence[int], arrays: Sequence[np.ndarray]) -> PartSummary:
        """Write one part whole (temporary name, fsync, rename)."""
        path = self.part_path(rank, number)
        temporary = path.with_name(path.name + ".tmp")
        lengths = np.array([array.shape[-2] for array in arrays], dtype=np.int64)
        with h5py.File(temporary, "w") as part:
            for index, array in zip(indices, arrays, strict=True):
                part.create_dataset(str(index), data=array)
            part.create_dataset("line_index", data=np.asarray(indices, dtype=np.int64))
            part.create_dataset("line_length", data=lengths)
        _fsync(temporary)
        os.replace(temporary, path)
        _fsync(self.folder)
        return PartSummary(len(lengths), int(lengths.sum()))

    # -- OUTPUT ---------------------------------------------------------------------------------

    def write_output(
        self, total: int, item_shape: tuple[int, ...], merge: bool, sentences: Iterable[str] | None
    ) -> None:
        """Make OUTPUT from the complete parts of ``total`` lines; ``item_shape`` is a dataset's shape
        around its token axis: (n_layers, width) for all layers, (width,) for one."""
        temporary = self.folder / "output.tmp"
        index_text = self._write_sentence_index(sentences) if sentences is not None else None
        with h5py.File(temporary, "w") as out:
            for index, path, part, n_tokens in self._lines(total):
                name = str(index).encode()
                if merge:
                    h5py.h5o.copy(part.id, name, out.id, name)
                else:
                    shape = (*item_shape[:-1], n_tokens, item_shape[-1])
                    _create_virtual(out, name, f"{self.folder.name}/{path.name}".replace("%", "%%"), shape)
            offset = _allocate_string(out, SENTENCE_INDEX, index_text.stat().st_size) if index_text else None
        if index_text is not None:
            _copy_into(index_text, temporary, offset)
            index_text.unlink()
        _fsync(temporary)
        os.replace(temporary, self.output)
        _fsync(self.output.parent)
        if merge:
            shutil.rmtree(self.folder)

    def _lines(self, total: int) -> Iterator[tuple[int, Path, h5py.File, int]]:
        """(line index, its part's path, the open part, its token count) for every line in order; each
        rank's current part stays open, and is checked to hold the lines its name says."""
        current: dict[int, tuple[int, h5py.File, np.ndarray]] = {}  # rank -> (part number, file, line_length)
        try:
            for index in range(total):
                rank, position = index % self.world_size, index // self.world_size
                number, row = divmod(position, self.part_lines)
                path = self.part_path(rank, number)
                if rank not in current or current[rank][0] != number:
                    if rank in current:
                        current.pop(rank)[1].close()
                    current[rank] = (number, *self._open_part(path, rank, number))
                yield index, path, current[rank][1], int(current[rank][2][row])
        finally:
            for _, part, _ in current.values():
                part.close()

    def _open_part(self, path: Path, rank: int, number: int) -> tuple[h5py.File, np.ndarray]:
        if not path.is_file():
            raise PartsError(f"{path} is missing, so its lines have not been embedded; rerun to finish")
        part = h5py.File(path, "r")
        line_index, line_length = part["line_index"][...], part["line_length"][...]
        positions = np.arange(number * self.part_lines, number * self.part_lines + len(line_index))
        if not np.array_equal(line_index, positions * self.world_size + rank):
            part.close()
            raise PartsError(f"{path} does not hold the lines its name says; delete {self.folder} and rerun")
        return part, line_length

    def _write_sentence_index(self, sentences: Iterable[str]) -> Path:
        """The JSON of sentence_to_index, written piece by piece to a file in the parts folder; a later
        duplicate key wins when JSON is read, as it does in the dict AllenNLP builds."""
        path = self.folder / f"{SENTENCE_INDEX}.json.tmp"
        with path.open("w", encoding="ascii") as out:
            out.write("{")
            for index, line in enumerate(sentences):
                out.write(f'{", " if index else ""}{json.dumps(" ".join(line.split()))}: "{index}"')
            out.write("}")
        if path.stat().st_size > MAX_STRING_BYTES:
            path.unlink()
            raise PartsError("sentence_to_index would exceed the 4 GB an HDF5 string can hold; pass --forget-sentences")
        return path


def _create_virtual(out: h5py.File, name: bytes, source: str, shape: tuple[int, ...]) -> None:
    """Dataset ``name`` of ``out``: the dataset of the same name in the file ``source`` (a path
    relative to ``out``'s folder, "%" written "%%" as HDF5 asks); empty when there is no token."""
    space = h5py.h5s.create_simple(shape)
    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    if 0 not in shape:
        plist.set_fill_value(np.array(np.nan, dtype=np.float32))
        plist.set_virtual(space, source.encode(), name, space)
    h5py.h5d.create(out.id, name, h5py.h5t.IEEE_F32LE, space, dcpl=plist).close()


def _allocate_string(out: h5py.File, name: str, size: int) -> int:
    """A one-element fixed-length string dataset of ``size`` bytes, stored contiguously and allocated
    now; its byte offset in the file, where the text is copied once the file is closed."""
    string = h5py.h5t.C_S1.copy()
    string.set_size(max(size, 1))
    string.set_strpad(h5py.h5t.STR_NULLPAD)
    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    plist.set_layout(h5py.h5d.CONTIGUOUS)
    plist.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dataset = h5py.h5d.create(out.id, name.encode(), string, h5py.h5s.create_simple((1,)), dcpl=plist)
    offset = dataset.get_offset()
    dataset.close()
    return offset


def _copy_into(source: Path, target: Path, offset: int, block: int = 1 << 20) -> None:
    with source.open("rb") as reader, target.open("r+b") as writer:
        writer.seek(offset)
        shutil.copyfileobj(reader, writer, block)


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    _fsync(temporary)
    os.replace(temporary, path)


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
