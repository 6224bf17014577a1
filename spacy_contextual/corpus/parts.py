"""Embeddings of a corpus in the HDF5 layout of ``allennlp elmo``, written in resumable parts.

OUTPUT holds one float32 dataset per input line, keyed "0", "1", ...: (n_layers, n, width) for all
layers, (n, width) for one; and ``sentence_to_index``, a one-element string dataset holding the JSON
{sentence: "line index"} (tokens joined by single spaces; a repeated sentence maps to its last line).

While a run goes on, every process (rank r of a world of w) writes into the folder OUTPUT.parts
beside OUTPUT, which carries the marker file ``MARKER``: a folder without it is not ours, and is
refused, never emptied. Line i belongs to rank i mod w; part ``part-RRRRR-SSSSSS.hdf5`` holds the
lines of rank R's share from S * part_lines on (``part_lines`` of them, the last part fewer), as the
same datasets as OUTPUT plus ``line_index`` and ``line_length``. Its attributes record the SHA-256 of
the input lines it was made from (``input_sha256``), the input's size and mtime then, and the
SHA-256 of its own data (``checksum``, computed from the arrays as they are written): a resumed run
recomputes a damaged part, and OUTPUT is only assembled from parts whose input lines are, byte for
byte, those of INPUT now. A part this process wrote, found with the same inode, size and mtime, is
not read back to check its checksum again (``_WRITTEN``). A part is written
under a temporary name and renamed once complete, so the folder only ever holds whole parts.
``run.json`` records what the parts were made with (encoder, model and input files, layers,
batching, processes); a run with other settings is refused, not mixed in.

When every share is complete, ``write_output`` makes OUTPUT from the parts: virtual datasets
(HDF5 1.10 or newer reads them) whose source is the part file, named by a path relative to OUTPUT's
folder, so OUTPUT and OUTPUT.parts can move together; or, with ``merge``, a plain copy, after which
the tool's files in the folder are deleted (and the folder, once empty). A virtual dataset whose
part is missing reads as NaN, never as plausible zeros. OUTPUT itself is written under a temporary
name and renamed: a reader never sees half of it. Every temporary file is removed when a write
fails; a full disk is reported as such. ``sentence_to_index`` is streamed to disk, so no step holds
the whole input.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from ..text_files import read_json
from ..writer import MARK, atomic_file, check_room, fsync_directory, fsync_file
from .folder import MARKER, OWN_FILE, PartsError, disk_errors, parts_folder
from .lines import Corpus

_WRITTEN: set[tuple] = set()  # the stamps of the parts this process wrote (_stamp)

RUN_FILE = "run.json"
SENTENCE_INDEX = "sentence_to_index"
LOCK_WAIT_SECONDS = 15.0  # a killed run's processes may take a moment to release their locks
MAX_STRING_BYTES = 2**32 - 1  # HDF5 stores a string type's size in 4 bytes


@dataclass(frozen=True)
class PartSummary:
    lines: int
    tokens: int


HDF5_OVERHEAD = 4096  # bytes an HDF5 dataset takes beyond its data (header, B-tree entry)


class PartsFolder:
    def __init__(self, output: Path, world_size: int, part_lines: int):
        self.output = Path(output)
        self.folder = parts_folder(self.output)
        self.world_size = world_size
        self.part_lines = part_lines

    # -- the run the parts belong to ------------------------------------------------------------

    def check_run(self, settings: dict) -> None:
        """Refuse parts made with other settings than ``settings``."""
        run_file = self.folder / RUN_FILE
        if not run_file.is_file():
            if any(self._own("part-*.hdf5")):
                raise PartsError(f"{self.folder} holds parts but no {RUN_FILE}; delete the folder to start over")
            return
        recorded = read_json(run_file, f"delete {self.folder} to start over", PartsError)
        if not isinstance(recorded, dict):
            raise PartsError(f"{run_file} is damaged (not a JSON object); delete {self.folder} to start over")
        if recorded == settings:
            return
        start_over = f"delete {self.folder} (and any {self.output.name} made from it) to start over"
        changed = sorted(key for key in recorded.keys() | settings.keys() if recorded.get(key) != settings.get(key))
        if changed == ["input"]:
            raise PartsError(
                f"INPUT changed since the parts in {self.folder} were made from it ({recorded['input']} then, "
                f"{settings['input']} now), so they cannot be continued; {start_over}"
            )
        details = "; ".join(f"{key}: {recorded.get(key)!r} there, {settings.get(key)!r} now" for key in changed)
        raise PartsError(
            f"{self.folder} holds the parts of another run ({details}). Rerun with the same settings to "
            f"continue it, or {start_over}"
        )

    def record_run(self, settings: dict) -> None:
        path = self.folder / RUN_FILE
        with disk_errors(path), atomic_file(path) as temporary:
            temporary.write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")

    # -- one rank's parts -----------------------------------------------------------------------

    def part_path(self, rank: int, number: int) -> Path:
        return self.folder / f"part-{rank:05d}-{number:06d}.hdf5"

    def share_size(self, rank: int, total: int) -> int:
        return len(range(rank, total, self.world_size))

    @contextmanager
    def lock(self, rank: int) -> Iterator[None]:
        """Hold rank's lock (two runs must not write the same parts); leftovers of a killed write go."""
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
            for pattern in (f"part-{rank:05d}-*.hdf5.tmp", f".part-{rank:05d}-*.hdf5.*{MARK}new"):
                for leftover in self._own(pattern):  # a killed run's unfinished parts
                    leftover.unlink()
            yield

    def committed(self, rank: int) -> list[PartSummary]:
        """Rank's whole parts, in order (the consecutive ones from part 0)."""
        summaries = []
        while (path := self.part_path(rank, len(summaries))).is_file():
            summaries.append(self.summary(path))
        return summaries

    def resume(self, rank: int, log: Callable[[str], None]) -> list[PartSummary]:
        """Rank's whole parts that pass their checksum; from the first damaged one on, they are
        deleted (and so recomputed)."""
        summaries = []
        while (path := self.part_path(rank, len(summaries))).is_file():
            if not _intact(path):
                log(f"{path} is damaged (its checksum does not match its data); recomputing it and the parts after it")
                self.discard(rank, first=len(summaries))
                break
            summaries.append(self.summary(path))
        return summaries

    def summary(self, path: Path) -> PartSummary:
        with h5py.File(path, "r") as part:
            lengths = part["line_length"][...]
        return PartSummary(len(lengths), int(lengths.sum()))

    def discard(self, rank: int, first: int = 0) -> None:
        for path in self._own(f"part-{rank:05d}-*.hdf5"):
            if int(path.stem.rsplit("-", 1)[1]) >= first:
                path.unlink()

    def write_part(
        self,
        rank: int,
        number: int,
        indices: Sequence[int],
        arrays: Sequence[np.ndarray],
        input_lines: Sequence[bytes],
        input_stat: os.stat_result,
    ) -> PartSummary:
        """Write one part whole (temporary name, fsync, rename), with the digests of its input and its data."""
        path = self.part_path(rank, number)
        lengths = np.array([array.shape[-2] for array in arrays], dtype=np.int64)
        with disk_errors(path):
            check_room(path, sum(array.nbytes for array in arrays) + HDF5_OVERHEAD * (len(arrays) + 1))
        datasets = {str(index): array for index, array in zip(indices, arrays, strict=True)}
        datasets["line_index"], datasets["line_length"] = np.asarray(indices, dtype=np.int64), lengths
        with disk_errors(path), atomic_file(path) as temporary, h5py.File(temporary, "w") as part:
            for name, array in datasets.items():
                part.create_dataset(name, data=array)
            part.attrs["input_sha256"] = hashlib.sha256(b"".join(input_lines)).hexdigest()
            part.attrs["input_size"], part.attrs["input_mtime_ns"] = input_stat.st_size, input_stat.st_mtime_ns
            part.attrs["checksum"] = _digest((name, datasets[name]) for name in sorted(datasets))
        _WRITTEN.add(_stamp(path))
        return PartSummary(len(lengths), int(lengths.sum()))

    # -- OUTPUT ---------------------------------------------------------------------------------

    def write_output(self, corpus: Corpus, total: int, item_shape: tuple[int, ...], merge: bool, keep: bool) -> None:
        """Make OUTPUT from the complete parts of ``total`` lines, once every part is shown to hold
        the lines of INPUT as it is now; ``item_shape`` is a dataset's shape around its token axis:
        (n_layers, width) for all layers, (width,) for one. ``keep``: write ``sentence_to_index``."""
        temporary = self.folder / "output.tmp"
        index_text = self.folder / f"{SENTENCE_INDEX}.json.tmp"
        try:
            with disk_errors(index_text):
                self._check_input(corpus, total, index_text if keep else None)
            parts_bytes = sum(path.stat().st_size for path in self.folder.glob("part-*.hdf5")) if merge else 0
            index_bytes = index_text.stat().st_size if keep else 0
            check_room(self.output, parts_bytes + index_bytes + HDF5_OVERHEAD * (total + 1))
            with disk_errors(self.output), h5py.File(temporary, "w") as out:
                for index, path, part, n_tokens in self._lines(total):
                    name = str(index).encode()
                    if merge:
                        h5py.h5o.copy(part.id, name, out.id, name)
                    else:
                        shape = (*item_shape[:-1], n_tokens, item_shape[-1])
                        _create_virtual(out, name, f"{self.folder.name}/{path.name}".replace("%", "%%"), shape)
                offset = _allocate_string(out, SENTENCE_INDEX, index_text.stat().st_size) if keep else None
            with disk_errors(self.output):
                if keep:
                    _copy_into(index_text, temporary, offset)
                fsync_file(temporary)
                os.replace(temporary, self.output)
        finally:
            temporary.unlink(missing_ok=True)
            index_text.unlink(missing_ok=True)
        fsync_directory(self.output.parent)
        if merge:
            self.remove()

    def remove(self) -> None:
        """Delete the files this tool wrote in the folder, and the folder once nothing else is left."""
        for path in self.folder.iterdir():
            if OWN_FILE.fullmatch(path.name) and path.name != MARKER:
                path.unlink()
        if [path.name for path in self.folder.iterdir()] == [MARKER]:
            shutil.rmtree(self.folder)

    def _check_input(self, corpus: Corpus, total: int, index_text: Path | None) -> None:
        """Read INPUT once: every part's input lines must hash as they did when it was written (a
        corpus changed or replaced during the run is refused), and ``sentence_to_index`` is written as
        JSON piece by piece to ``index_text``. A later duplicate key wins when JSON is read, as it does
        in the dict AllenNLP builds."""
        digests: dict[tuple[int, int], hashlib._Hash] = {}
        count = 0
        with open(index_text or os.devnull, "w", encoding="ascii") as out:
            out.write("{")
            for index, raw in enumerate(corpus.raw_lines()):
                rank, position = index % self.world_size, index // self.world_size
                digests.setdefault((rank, position // self.part_lines), hashlib.sha256()).update(raw)
                if index_text is not None:
                    sentence = " ".join(corpus.decode(raw, index + 1).split())
                    out.write(f'{", " if index else ""}{json.dumps(sentence)}: "{index}"')
                count = index + 1
            out.write("}")
        changed = "INPUT changed while it was embedded ({}), so nothing was written; delete {} and run again"
        if count != total:
            raise PartsError(changed.format(f"{count} lines now, {total} when the run started", self.folder))
        for (rank, number), digest in sorted(digests.items()):
            path = self._existing(self.part_path(rank, number))
            with h5py.File(path, "r") as part:
                recorded = part.attrs.get("input_sha256")
            if recorded != digest.hexdigest():
                raise PartsError(
                    changed.format(f"the lines of {path.name} differ from those it was made from", self.folder)
                )
        if index_text is not None and index_text.stat().st_size > MAX_STRING_BYTES:
            raise PartsError("sentence_to_index would exceed the 4 GB an HDF5 string can hold; pass --forget-sentences")

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

    def _existing(self, path: Path) -> Path:
        if not path.is_file():
            raise PartsError(f"{path} is missing, so its lines have not been embedded; rerun to finish")
        return path

    def _open_part(self, path: Path, rank: int, number: int) -> tuple[h5py.File, np.ndarray]:
        if not _intact(self._existing(path)):
            raise PartsError(f"{path} is damaged (its checksum does not match its data); rerun to recompute it")
        part = h5py.File(path, "r")
        line_index, line_length = part["line_index"][...], part["line_length"][...]
        positions = np.arange(number * self.part_lines, number * self.part_lines + len(line_index))
        if not np.array_equal(line_index, positions * self.world_size + rank):
            part.close()
            raise PartsError(f"{path} does not hold the lines its name says; delete {self.folder} and rerun")
        return part, line_length

    def _own(self, pattern: str) -> Iterator[Path]:
        return (path for path in self.folder.glob(pattern) if OWN_FILE.fullmatch(path.name))


def _digest(datasets: Iterable[tuple[str, np.ndarray]]) -> str:
    """A part's checksum: SHA-256 over its datasets (name, dtype, shape and bytes), given in name order."""
    digest = hashlib.sha256()
    for name, data in datasets:
        digest.update(f"{name}:{data.dtype.str}:{data.shape};".encode())
        digest.update(np.ascontiguousarray(data).data)
    return digest.hexdigest()


def _intact(path: Path) -> bool:
    """The part can be read and its data hashes to its recorded checksum (or this process wrote it, and
    it is still the file it wrote)."""
    try:
        if _stamp(path) in _WRITTEN:
            return True
        with h5py.File(path, "r") as part:
            return part.attrs.get("checksum") == _digest((name, part[name][...]) for name in sorted(part))
    except (OSError, KeyError, ValueError):
        return False


def _stamp(path: Path) -> tuple:
    """What tells a file this process wrote from any other: its path, inode, size and mtime."""
    status = path.stat()
    return str(path.resolve()), status.st_ino, status.st_size, status.st_mtime_ns


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
