"""Directories and files written so that a kill leaves either the old version or the new one.

``atomic_directory(path)`` yields an empty ``<path>.tmp`` beside ``path``; when the block succeeds
every file in it is fsynced and it takes the place of ``path`` in one step (Linux
``renameat2(RENAME_EXCHANGE)`` swaps the two, then the old one is deleted). Where the exchange is
not available the old directory is first renamed to ``<path>.old``; a kill between the two renames
leaves ``.old`` and ``.tmp``, both complete, and the readers say so. A failure inside the block
removes the temporary directory and leaves ``path`` as it was.

``atomic_file(path)`` does the same for one file: write ``<path>.tmp``, fsync, rename over ``path``.

Every failure (an exception, a full disk, a signal) removes the temporary. A ``path`` that is a
symlink keeps its link: the new version is written where it points. A device or other special file
is never replaced. Nothing is written inside the package's own ``assets/`` (the bundled models)
unless the environment variable ``SPACY_CONTEXTUAL_ALLOW_PACKAGE_WRITE=1`` asks for it.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ContextualError
from ..types import PathLike
from .bundled import ASSETS

ALLOW_PACKAGE_WRITE_ENV = "SPACY_CONTEXTUAL_ALLOW_PACKAGE_WRITE"

AT_FDCWD, RENAME_EXCHANGE = -100, 2
_LIBC = ctypes.CDLL(None, use_errno=True) if os.name == "posix" else None
_RENAMEAT2 = getattr(_LIBC, "renameat2", None)


def sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def fsync_tree(directory: Path) -> None:
    """Flush every file below ``directory``, then the directories themselves, to the disk."""
    for root, _, files in os.walk(directory):
        for name in files:
            fsync_file(Path(root) / name)
        fsync_directory(Path(root))


def fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def fsync_directory(path: Path) -> None:
    if os.name != "posix":  # directories cannot be opened for fsync elsewhere
        return
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _exchange(first: Path, second: Path) -> bool:
    if _RENAMEAT2 is None:
        return False
    return _RENAMEAT2(AT_FDCWD, os.fsencode(first), AT_FDCWD, os.fsencode(second), RENAME_EXCHANGE) == 0


def replace_directory(new: Path, target: Path) -> None:
    """Put the complete directory ``new`` in place of ``target`` (which may not exist)."""
    old = sibling(target, ".old")
    if not target.exists():
        new.rename(target)
    elif _exchange(new, target):
        shutil.rmtree(new)  # now holds the previous version
    else:
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
        new.rename(target)
    fsync_directory(target.parent)
    shutil.rmtree(old, ignore_errors=True)


def output_target(path: PathLike) -> Path:
    """Where writing ``path`` lands (a symlink followed, so the link is kept), once it is known not to
    be inside the package's assets (without ``SPACY_CONTEXTUAL_ALLOW_PACKAGE_WRITE=1``)."""
    target = Path(os.path.realpath(path))
    if target.is_relative_to(ASSETS.resolve()) and os.environ.get(ALLOW_PACKAGE_WRITE_ENV) != "1":
        raise ContextualError(
            f"{path} is inside the installed package's bundled models ({ASSETS}); write somewhere else, or set "
            f"{ALLOW_PACKAGE_WRITE_ENV}=1 to replace them on purpose"
        )
    return target


def check_output_dir(path: PathLike) -> Path:
    """Fail now if ``path`` cannot become an output folder: a file or device is there, or it is inside the
    package's bundled models (``output_target``)."""
    target = output_target(path)
    if target.exists() and not target.is_dir():
        kind = "a file" if target.is_file() else "a device or other special file"
        raise ContextualError(f"{path} is {kind}, not a directory; give a directory to write to")
    return target


def check_not_special(target: Path) -> None:
    """A device, FIFO or socket at ``target`` is never replaced by a file."""
    if target.exists() and not target.is_file() and not target.is_dir():
        raise ContextualError(
            f"cannot write {target}: it is a device or other special file, not a regular file; give a file name"
        )


@contextmanager
def atomic_directory(path: PathLike, may_replace=None) -> Iterator[Path]:
    """Write a directory through a temporary one; ``may_replace(existing)`` says whether an existing
    ``path`` may be replaced (default: only an empty directory), so user files are never deleted."""
    target = check_output_dir(path)
    if target.is_dir() and any(target.iterdir()) and not (may_replace and may_replace(target)):
        raise ContextualError(
            f"{target} already holds other files; give a new or empty directory (it is replaced as a whole)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = sibling(target, ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
        fsync_tree(tmp)
        replace_directory(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextmanager
def atomic_file(path: PathLike) -> Iterator[Path]:
    """Yields ``<path>.tmp`` to write; on success it is fsynced and renamed over ``path``."""
    target = output_target(path)
    check_not_special(target)
    tmp = sibling(target, ".tmp")
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_directory(target.parent)


def check_can_write(path: PathLike, protect: Iterable[PathLike] = ()) -> Path:
    """Fail now, before any work, if the file ``path`` cannot be written: it is a directory, a device or
    other special file, its folder is missing, or a file cannot be created there (tried, so a
    read-only mount counts too). ``protect`` names files and folders the command reads (its input,
    the model's files): ``path`` may not be one of them (by device and inode, so not through a symlink
    or a hard link either), nor lie inside a protected folder."""
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise IsADirectoryError(f"cannot write {target}: it is a directory; give a file name")
    check_not_special(target)
    for kept in map(Path, protect):
        if _same_or_inside(target, kept):
            what = kept if kept.is_file() else f"a file of {kept}"
            raise ContextualError(f"cannot write {target}: it is {what}, which this command reads; give another file")
    output_target(target)
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {target}: the folder {folder} does not exist; create it first")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise PermissionError(
            f"cannot write to {folder} ({error.strerror}); choose a folder you can write to"
        ) from None
    return target


def _same_or_inside(target: Path, kept: Path) -> bool:
    """``target`` is the file ``kept`` or a file of the folder ``kept`` (by inode), or a path inside it."""
    if kept.is_dir() and target.resolve().is_relative_to(kept.resolve()):
        return True
    if not target.exists():
        return False
    inode = _inode(target)
    files = (Path(root) / name for root, _, names in os.walk(kept) for name in names) if kept.is_dir() else [kept]
    return any(_inode(file) == inode for file in files if file.exists())


def _inode(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_dev, status.st_ino
