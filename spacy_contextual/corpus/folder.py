"""OUTPUT.parts/, the folder beside OUTPUT where a run keeps its parts: made by this tool, and only
ever emptied of what this tool wrote.

The folder carries the marker file ``MARKER``; a folder of that name without it (or a file, or a
symlink) is refused, never emptied, and of the files in it only the names ``OWN_FILE`` matches are
ever deleted. A stream (stdin, a pipe), which can be read only once, is copied into it as
``input.spool`` for every rank to read, and removed when the run ends. A full disk while writing
into it is one error that names the file and the fix (``disk_errors``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ContextualError
from ..writer import MARK, StorageError, atomic_file, name_max, storage_failure

MARKER = ".spacy-contextual-parts"
SPOOL = "input.spool"
# every name the tool writes in OUTPUT.parts: nothing else there is ever removed
OWN_NAME = r"(part-\d{5}-\d{6}\.hdf5|rank-\d{5}\.lock|run\.json|input\.spool|output|sentence_to_index\.json)"
OWN_FILE = re.compile(  # the name, its .tmp, or the one writer's working name for it
    rf"{OWN_NAME}(\.tmp)?|\.{OWN_NAME}\.[0-9a-z_]+{re.escape(MARK)}new|{re.escape(MARKER)}"
)


class PartsError(ContextualError):
    """OUTPUT.parts cannot be continued or assembled as asked."""


def parts_folder(output: Path) -> Path:
    return output.parent / f"{output.name}.parts"


def check_parts_folder(output: Path) -> Path:
    """OUTPUT.parts, refused when something that is not a folder this tool made has that name, or when
    OUTPUT's name leaves no room for the ``.parts`` the folder adds to it."""
    folder = parts_folder(output)
    size, limit = len(os.fsencode(folder.name)), name_max(folder.parent)
    if size > limit:
        raise PartsError(
            f"cannot write {output}: the folder of its parts, OUTPUT.parts, would have a name of {size} bytes, more "
            f"than the {limit} this file system allows; give OUTPUT a name of at most {limit - len('.parts')} bytes"
        )
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise PartsError(f"{folder} exists and is not a folder; move it away or give another OUTPUT")
    if folder.is_dir() and not (folder / MARKER).is_file():
        raise PartsError(
            f"{folder} exists but was not made by spacy-contextual (it has no {MARKER} file), so it is left "
            "alone; move it away or give another OUTPUT"
        )
    return folder


def create_parts_folder(output: Path) -> Path:
    folder = check_parts_folder(output)
    if not folder.is_dir():
        folder.mkdir()
        (folder / MARKER).write_text("written by spacy-contextual elmo/cove; safe to delete\n", encoding="utf-8")
    return folder


def spool(stream: Path, output: Path) -> tuple[Path, list]:
    """Copy a stream (stdin, a pipe) that can be read only once to OUTPUT.parts/input.spool, which
    every rank can read; returns it and what identifies its text: [name, size, SHA-256]."""
    path = create_parts_folder(output) / SPOOL
    digest = hashlib.sha256()
    try:
        with disk_errors(path), atomic_file(path) as temporary, open(stream, "rb") as source:
            with temporary.open("wb") as out:
                while block := source.read(1 << 20):
                    digest.update(block)
                    out.write(block)
    except BaseException:
        remove_spool(output)
        raise
    return path, [Path(stream).name, path.stat().st_size, digest.hexdigest()]


def remove_spool(output: Path) -> None:
    """Delete OUTPUT.parts/input.spool (a rerun reads the stream again), and the folder when nothing
    else of a run is in it."""
    folder = parts_folder(output)
    (folder / SPOOL).unlink(missing_ok=True)
    if folder.is_dir() and [path.name for path in folder.iterdir()] == [MARKER]:
        shutil.rmtree(folder)


@contextmanager
def disk_errors(path: Path) -> Iterator[None]:
    """A write the storage refused (full disk, file-size limit, quota, I/O error) as one line that names
    ``path`` and the fix; the part being written is removed by the writer."""
    try:
        yield
    except StorageError as error:  # the writer's own line, naming the part
        raise PartsError(f"{error}, then run the same command to resume") from None
    except (OSError, RuntimeError) as error:  # h5py raises either, with the errno in its message
        reason = storage_failure(error)
        if reason is None:
            raise
        raise PartsError(
            f"could not write {path}: {reason}; free some space (or raise the limit) and run the same command to resume"
        ) from None
