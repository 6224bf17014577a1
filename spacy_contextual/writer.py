"""The one guarded writer: every file and folder the package writes goes through ``atomic_file`` or
``atomic_directory``, which keep these promises.

* Nothing the command reads is overwritten: ``reads`` names its inputs, model files and vocabularies,
  and an output that is one of them (by device and inode, so not through a link either) or lies inside
  one of those folders is refused before any work. Inside ``command_reads()`` (the command line's one
  runner opens it around every command) the resolver and the text readers add what they open
  (``note_read``), so a write that comes later in the command is checked against them too. What the
  running command reads is a ``ContextVar`` holding a tuple: each ``note_read`` sets a longer tuple in
  the current context, so nothing is shared between commands, threads or tests.
* Nothing of the user's beside the output is touched: the work happens under the writer's own names,
  ``.<name>.<random>.spacy-contextual-new`` (and ``-old`` for the previous version while it is swapped
  out), which no user file can collide with; nothing else in the folder is renamed or deleted.
* The package's own ``assets/`` (the bundled models) are never written, unless
  ``SPACY_CONTEXTUAL_ALLOW_PACKAGE_WRITE=1`` asks for it.
* A device, FIFO or socket is never written to or replaced; a symlinked output keeps its link (the new
  version lands where it points), unless the link is another user's in a folder others can write to
  (sticky or world-writable, like ``/tmp``): such a link may point at any file of yours, so the write is
  refused, as the kernel's ``fs.protected_symlinks`` does, whatever that setting is here.
* A name longer than the file system allows (``NAME_MAX``, 255 bytes on most) is refused naming the
  user's path; the working names always fit, however long the user's name (``working_prefix`` keeps
  the start of a long name and a digest of the whole).
* One writer per output: a command holds ``output_lock`` on each of its outputs while it runs, and a
  second process writing the same output is refused in one line naming the first (its lock file,
  ``.<name>.lock.spacy-contextual-lock``, lives beside the output only while the lock is held).
* The write is atomic: the new content is complete and fsynced before it takes the output's place in one
  step (Linux ``renameat2(RENAME_EXCHANGE)`` for folders, ``rename`` for files), so nothing is truncated
  first, and every failure (an exception, a full disk, a signal) removes the writer's own temporary.
  Where the exchange is unavailable the old folder is renamed aside first; a kill between the two renames
  leaves both versions, complete, under the marked names that ``interrupted_versions`` finds.
* New files get the permissions the umask gives (0644 under 0022), like any file the user creates.
* Names taken from data (``child``) never leave the output folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import glob
import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from . import environment
from .errors import ContextualError, quoted
from .locations import ASSETS
from .types import PathLike

ALLOW_PACKAGE_WRITE_ENV = environment.ALLOW_PACKAGE_WRITE.name
MARK = ".spacy-contextual-"  # every working name the writer makes ends in MARK + "new", "old" or "lock"
KINDS = ("new", "old", "lock")
RANDOM = re.compile(r"[a-z0-9_]+")  # the random part of a working name (tempfile's letters, or hex)
RANDOM_CHARACTERS = 12  # at most: tempfile adds 8, working_name 12
DEFAULT_NAME_MAX = 255
MAX_LINKS = 40  # links followed on one path before the kernel says ELOOP

AT_FDCWD, RENAME_EXCHANGE = -100, 2
_LIBC = ctypes.CDLL(None, use_errno=True) if os.name == "posix" else None
_RENAMEAT2 = getattr(_LIBC, "renameat2", None)


class OutputError(ContextualError):
    """An output path that the writer refuses: it is read by the command, special, or protected."""


#: what the running command reads, in this context; None outside a command
COMMAND_READS: ContextVar[tuple[Path, ...] | None] = ContextVar("command_reads", default=None)


@contextmanager
def command_reads(paths: Iterable[PathLike | None] = ()) -> Iterator[None]:
    """While the block runs, every write is checked against ``paths`` and whatever ``note_read`` adds."""
    token = COMMAND_READS.set(tuple(Path(path) for path in paths if path is not None and str(path) not in ("", "-")))
    try:
        yield
    finally:
        COMMAND_READS.reset(token)


def note_read(path: PathLike) -> None:
    """Record that the running command reads ``path`` (a file or a model folder); no-op outside a command."""
    reads = COMMAND_READS.get()
    if reads is not None and str(path) not in ("", "-"):
        COMMAND_READS.set((*reads, Path(path)))


def read_by_command() -> tuple[Path, ...]:
    """What the running command has read so far (nothing outside a command)."""
    return COMMAND_READS.get() or ()


def name_max(folder: Path) -> int:
    """The longest file name (in bytes) the file system of ``folder`` (or of its nearest existing
    ancestor) allows."""
    for existing in (folder, *folder.parents):
        try:
            return os.pathconf(existing, "PC_NAME_MAX")
        except (OSError, ValueError):
            continue
    return DEFAULT_NAME_MAX


def working_prefix(target: Path) -> str:
    """How the writer's working names for ``target`` start: ``.<name>.``, or, where that would leave a
    working name longer than the file system allows, ``.<start of name>.<digest of name>-`` (the digest
    keeps two long names that start alike apart; the ``-`` keeps it from a short name's random part)."""
    room = name_max(target.parent) - len(MARK) - max(map(len, KINDS)) - RANDOM_CHARACTERS
    prefix = f".{target.name}."
    if len(os.fsencode(prefix)) <= room:
        return prefix
    digest = hashlib.sha256(os.fsencode(target.name)).hexdigest()[:16]
    start = target.name
    while len(os.fsencode(f".{start}.{digest}-")) > room:
        start = start[:-1]
    return f".{start}.{digest}-"


def working_name(target: Path, kind: str) -> Path:
    """A fresh, unguessable name beside ``target`` for the writer's own use (``kind``: new or old)."""
    return target.with_name(f"{working_prefix(target)}{secrets.token_hex(6)}{MARK}{kind}")


def interrupted_versions(target: PathLike, kinds: tuple[str, ...] = ("old", "new")) -> list[Path]:
    """The previous (``old``) and new (``new``) versions that a write of ``target`` killed between its
    two renames left beside it, old ones first."""
    target = Path(target)
    if not target.parent.is_dir():
        return []
    prefix, endings = working_prefix(target), tuple(MARK + kind for kind in kinds)
    found = [
        path
        for path in target.parent.glob(f"{glob.escape(prefix)}*{MARK}*")
        if path.name.endswith(endings) and RANDOM.fullmatch(path.name[len(prefix) : path.name.rindex(MARK)])
    ]  # the random part has no dot: ``.a.b.<random>`` is a working name of ``a.b``, not of ``a``
    return sorted(found, key=lambda path: (not path.name.endswith("old"), path.name))


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


def current_umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: Path, directory: bool) -> None:
    """Give a file (0666) or folder (0777) that ``tempfile`` made private the mode the umask gives."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


def _exchange(first: Path, second: Path) -> bool:
    if _RENAMEAT2 is None:
        return False
    return _RENAMEAT2(AT_FDCWD, os.fsencode(first), AT_FDCWD, os.fsencode(second), RENAME_EXCHANGE) == 0


def replace_directory(new: Path, target: Path) -> None:
    """Put the complete directory ``new`` in place of ``target`` (which may not exist)."""
    if not target.exists():
        new.rename(target)
    elif _exchange(new, target):
        shutil.rmtree(new)  # now holds the previous version
    else:
        old = working_name(target, "old")
        target.rename(old)
        new.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    fsync_directory(target.parent)


def _is_special(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def output_target(path: PathLike) -> Path:
    """Where writing ``path`` lands (each link on the way followed, so a link is kept), once it is known
    that no name on the way is too long, that no link on the way is another user's in a shared folder
    (``follow_links``), and that it is not inside the package's assets (without
    ``SPACY_CONTEXTUAL_ALLOW_PACKAGE_WRITE=1``)."""
    check_name_lengths(path)
    target = follow_links(path)
    if target.is_relative_to(ASSETS.resolve()) and not environment.ALLOW_PACKAGE_WRITE.get():
        raise OutputError(
            f"{path} is inside the installed package's bundled models ({ASSETS}); write somewhere else, or set "
            f"{ALLOW_PACKAGE_WRITE_ENV}=1 to replace them on purpose"
        )
    return target


def check_name_lengths(path: PathLike) -> None:
    """Every name on ``path`` fits the file system's ``NAME_MAX``, else one line naming the user's path."""
    path = Path(path)
    for name in path.parts:
        size, limit = len(os.fsencode(name)), name_max(path.parent)
        if size > limit:
            what = "its name" if name == path.name else f"the folder name {quoted(name, 40)} in it"
            raise OutputError(
                f"cannot write {quoted(str(path), 120)}: {what} has {size} bytes, more than the {limit} this file "
                "system allows in one name; give a shorter name"
            )


def follow_links(path: PathLike) -> Path:
    """``os.path.realpath(path)``, refusing, on the way, a link that the kernel's ``fs.protected_symlinks``
    rule would not follow: one in a sticky or world-writable folder that neither this user nor the
    folder's owner owns (whatever the kernel's setting here)."""
    pending = list(reversed((Path.cwd() / path).parts[1:]))
    current, links = Path("/"), 0
    while pending:
        name = pending.pop()
        if name == "..":
            current = current.parent
            continue
        candidate = current / name
        try:
            status = os.lstat(candidate)
        except OSError:  # nothing there (yet): nothing to follow
            current = candidate
            continue
        if not stat.S_ISLNK(status.st_mode):
            current = candidate
            continue
        check_link_owner(candidate, status, current)
        links += 1
        if links > MAX_LINKS:  # a loop: the write itself reports it
            return Path(os.path.realpath(path))
        link = Path(os.readlink(candidate))
        if link.is_absolute():
            current, link = Path("/"), link.relative_to("/")
        pending.extend(reversed(link.parts))
    return current


def check_link_owner(link: Path, status: os.stat_result, folder: Path) -> None:
    """A link in a folder that others can write to (sticky or world-writable) is followed only when this
    user or the folder's owner owns it."""
    folder_status = os.stat(folder)
    shared = folder_status.st_mode & (stat.S_ISVTX | stat.S_IWOTH)
    if shared and status.st_uid not in (os.geteuid(), folder_status.st_uid):
        raise OutputError(
            f"refusing to write through {link}: it is a link that another user (uid {status.st_uid}) owns in "
            f"{folder}, a folder others can write to, so it may point at any file of yours; remove the link or "
            "give another output"
        )


def check_not_special(target: Path) -> None:
    """A device, FIFO or socket at ``target`` is never written to or replaced."""
    if _is_special(target):
        raise OutputError(
            f"cannot write {target}: it is a device, FIFO or other special file, not a regular file; give a file name"
        )


def check_not_read(path: PathLike, reads: Iterable[PathLike | None]) -> None:
    """``path`` is none of the files the command reads, nor inside a folder it reads."""
    target = Path(path)
    for kept in (Path(item) for item in [*reads, *read_by_command()] if item is not None and str(item) != ""):
        if _same_or_inside(target, kept) or _same_or_inside(kept, target):
            what = kept if kept.is_file() or _same_path(target, kept) else f"a file of {kept}"
            if _same_or_inside(kept, target) and not _same_or_inside(target, kept):
                what = f"a folder holding {kept}"
            raise OutputError(f"cannot write {target}: it is {what}, which this command reads; give another output")


def check_output_dir(path: PathLike, reads: Iterable[PathLike | None] = ()) -> Path:
    """Fail now if ``path`` cannot become an output folder: a file or device is there, it is (or holds)
    something the command reads, or it is inside the package's bundled models."""
    target = output_target(path)
    if target.exists() and not target.is_dir():
        kind = "a file" if target.is_file() else "a device or other special file"
        raise OutputError(f"{path} is {kind}, not a directory; give a directory to write to")
    check_not_read(target, reads)
    return target


def check_output_file(path: PathLike, reads: Iterable[PathLike | None] = ()) -> Path:
    """Fail now if the file ``path`` may not be written: it is a directory, a device or other special
    file, something the command reads, or inside the package's bundled models."""
    check_name_lengths(path)
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"cannot write {target}: it is a directory; give a file name")
    check_not_special(target)
    check_not_read(target, reads)
    return output_target(target)


def check_can_write(path: PathLike, reads: Iterable[PathLike | None] = ()) -> Path:
    """Fail now, before any work, if the file ``path`` cannot be written: it is a directory, a device or
    other special file, something the command reads (``reads``), inside the bundled models, its folder is
    missing, or a file cannot be created there (tried, so a read-only mount counts too)."""
    target = Path(path)
    check_output_file(target, reads)
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write {target}: the folder {folder} does not exist; create it first")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise OutputError(f"cannot write to {folder} ({error.strerror}); choose a folder you can write to") from None
    return target


@contextmanager
def atomic_directory(
    path: PathLike,
    may_replace: Callable[[Path], bool] | None = None,
    reads: Iterable[PathLike | None] = (),
) -> Iterator[Path]:
    """Yields an empty working folder to fill; on success it takes the place of ``path`` in one step.
    ``may_replace(existing)`` says whether an existing ``path`` may be replaced (default: only an empty
    directory), so user files are never deleted."""
    target = check_output_dir(path, reads)
    if target.is_dir() and any(target.iterdir()) and not (may_replace and may_replace(target)):
        raise OutputError(
            f"{target} already holds other files; give a new or empty directory (it is replaced as a whole)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=working_prefix(target), suffix=MARK + "new", dir=target.parent))
    apply_umask(tmp, directory=True)
    try:
        yield tmp
        fsync_tree(tmp)
        replace_directory(tmp, target)
    except BaseException as error:
        shutil.rmtree(tmp, ignore_errors=True)
        raise_storage_failure(error, target)
        raise


@contextmanager
def atomic_file(path: PathLike, reads: Iterable[PathLike | None] = ()) -> Iterator[Path]:
    """Yields a working file name beside ``path`` to write; on success it is fsynced and renamed over
    ``path``. ``reads``: what the command reads, which ``path`` may not be."""
    target = output_target(path)
    check_not_special(target)
    check_not_read(target, reads)
    if target.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory; give a file name")
    descriptor, name = tempfile.mkstemp(prefix=working_prefix(target), suffix=MARK + "new", dir=target.parent)
    os.close(descriptor)
    tmp = Path(name)
    apply_umask(tmp, directory=False)
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, target)
    except BaseException as error:
        tmp.unlink(missing_ok=True)
        raise_storage_failure(error, target)
        raise
    fsync_directory(target.parent)


class BusyOutputError(OutputError):
    """Another process is writing the same output."""


_HELD: dict[Path, int] = {}  # the outputs this process holds the lock of, and how many times


@contextmanager
def output_lock(path: PathLike) -> Iterator[None]:
    """Hold the lock of the output ``path`` (its target, links followed) while the block runs; a second
    process asking for it is refused in one line naming the first, before it touches anything. The lock
    file sits beside the output (or beside the first folder on its path that does not exist yet) and is
    removed on release; a lock that cannot be made there (a read-only folder) is not needed, as nothing
    can be written there either. Reentrant within a process."""
    anchor = output_target(path)
    while not anchor.parent.is_dir() and anchor.parent != anchor:
        anchor = anchor.parent
    lock = anchor.with_name(f"{working_prefix(anchor)}lock{MARK}lock")
    if lock in _HELD:
        _HELD[lock] += 1
        try:
            yield
        finally:
            _HELD[lock] -= 1
        return
    descriptor = _acquire(lock, path)
    _HELD[lock] = 1
    try:
        yield
    finally:
        del _HELD[lock]
        if descriptor is not None:
            with contextlib.suppress(OSError):
                os.unlink(lock)  # before the lock is released: a waiting process then sees another file
            os.close(descriptor)


def _acquire(lock: Path, path: PathLike) -> int | None:
    """The descriptor of ``lock``, locked; None where no lock file can be made."""
    flags = os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    while True:
        try:
            descriptor = os.open(lock, os.O_RDWR | flags, 0o644)
        except PermissionError:
            try:  # another user's lock file: locking needs only reading it
                descriptor = os.open(lock, os.O_RDONLY | flags)
            except OSError:
                return None
        except OSError as error:
            if error.errno == errno.ELOOP:  # a link planted under the lock's name
                raise OutputError(f"cannot write {path}: {lock} is a link, not this tool's lock; remove it") from None
            return None
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise OutputError(f"cannot write {path}: {lock} is not a file, so not this tool's lock; remove it")
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = os.pread(descriptor, 64, 0).decode("ascii", "replace").strip()
                who = f"pid {owner}" if owner.isdigit() else f"its lock is {lock}"
                raise BusyOutputError(
                    f"{path} is being written by another process ({who}); wait for it to end, or give another output"
                ) from None
            if _still_at(lock, descriptor):  # not unlinked by its last holder before it let go
                with contextlib.suppress(OSError):
                    os.ftruncate(descriptor, 0)
                    os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
                return descriptor
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)


def _still_at(path: Path, descriptor: int) -> bool:
    try:
        return os.path.samestat(os.fstat(descriptor), os.lstat(path))
    except OSError:
        return False


@dataclass(frozen=True)
class Existing:
    """What was at an output before a command wrote it: its identity and size, and, for a folder, the
    identity and size of each entry in it (a command may replace the folder, or files inside it)."""

    path: Path
    identity: tuple
    bytes: int
    entries: dict[str, tuple[tuple, int]]


def existing_output(path: PathLike) -> Existing | None:
    """What is at ``path`` now; None where nothing is (or an empty folder)."""
    path = Path(path)
    try:
        status = os.stat(path)
    except OSError:
        return None
    if stat.S_ISDIR(status.st_mode):
        entries = {entry.name: (_identity(entry), _size(entry)) for entry in path.iterdir()}
        if not entries:
            return None
        return Existing(path, _identity(path), sum(size for _, size in entries.values()), entries)
    return Existing(path, _identity(path), status.st_size, {})


def replaced(before: Existing) -> list[tuple[Path, int]]:
    """(path, bytes before) of what a command replaced of ``before``: the output itself, or in a folder
    that it kept, the entries it replaced."""
    if not os.path.exists(before.path) or _identity(before.path) != before.identity:
        return [(before.path, before.bytes)]
    return [
        (before.path / name, size)
        for name, (identity, size) in before.entries.items()
        if os.path.exists(before.path / name) and _identity(before.path / name) != identity
    ]


def _identity(path: Path) -> tuple:
    status = os.stat(path)
    if stat.S_ISDIR(status.st_mode):
        return status.st_dev, status.st_ino
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def _size(path: Path) -> int:
    if not path.is_dir():
        return path.stat().st_size
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())


def child(folder: PathLike, name: str, what: str = "a name in the data") -> Path:
    """``folder / name`` for a ``name`` taken from data: one plain file name, never a path that leaves
    ``folder`` (no separator, no ``..``, not absolute, not hidden)."""
    parts = PurePosixPath(name.replace("\\", "/")).parts if isinstance(name, str) else ()
    if len(parts) != 1 or parts[0] in (".", "..") or parts[0].startswith(".") or "\x00" in name:
        raise OutputError(
            f"{what} is {quoted(name)}, which is not a plain file name; output names taken from data must stay "
            f"inside {folder}: fix the data"
        )
    return Path(folder) / parts[0]


STORAGE_FAILURES = {  # errno -> (reason, words of the same error in a library's message, e.g. h5py's)
    errno.ENOSPC: ("the disk is full", "No space left on device"),
    errno.EFBIG: ("the file is larger than this system allows (a file-size limit, e.g. ulimit -f)", "File too large"),
    errno.EDQUOT: ("the disk quota is used up", "Disk quota exceeded"),
    errno.EIO: ("the disk reported an input/output error", "Input/output error"),
}


class StorageError(OutputError):
    """A write the storage refused: a full disk, a file-size limit, a quota, an I/O error."""


def raise_storage_failure(error: BaseException, target: Path) -> None:
    """Raise ``error`` again as one ``StorageError`` line naming ``target``, if the storage refused the write."""
    reason = storage_failure(error) if isinstance(error, (OSError, RuntimeError)) else None
    if reason is not None:
        raise StorageError(
            f"could not write {target}: {reason}; nothing was left half-written: free some space or raise the limit"
        ) from None


def check_room(path: PathLike, nbytes: int) -> None:
    """Refuse now, before a library that cannot recover from a refused write (HDF5) starts, a file of about
    ``nbytes`` that the disk's free space or the process's file-size limit (``ulimit -f``) cannot hold."""
    import resource

    folder = Path(path).parent
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != resource.RLIM_INFINITY and nbytes > soft:
        reason = STORAGE_FAILURES[errno.EFBIG][0]
        raise OutputError(f"could not write {path} (about {nbytes:,} bytes; the limit is {soft:,}): {reason}")
    free = shutil.disk_usage(folder).free
    if nbytes > free:
        raise OutputError(f"could not write {path} (about {nbytes:,} bytes, {free:,} free): the disk is full")


def storage_failure(error: BaseException) -> str | None:
    """Why a write failed, when the storage refused it (full disk, file-size limit, quota, I/O error);
    None for any other error. Recognises the errno and the same words inside a library's message."""
    if isinstance(error, OSError) and error.errno in STORAGE_FAILURES:
        return STORAGE_FAILURES[error.errno][0]
    text = str(error)
    return next((reason for reason, words in STORAGE_FAILURES.values() if words in text), None)


def _same_or_inside(target: Path, kept: Path) -> bool:
    """``target`` is the file ``kept`` or a file of the folder ``kept`` (by inode), or a path inside it."""
    try:
        if kept.is_dir() and target.resolve().is_relative_to(kept.resolve()):
            return True
        if not target.exists() or not kept.exists():
            return False
        inode = _inode(target)
        if kept.is_dir():
            files = (Path(root) / name for root, _, names in os.walk(kept) for name in names)
        else:
            files = iter([kept])
        return any(_inode(file) == inode for file in files if file.exists())
    except OSError:
        return False


def _same_path(first: Path, second: Path) -> bool:
    try:
        return first.resolve() == second.resolve()
    except OSError:
        return False


def _inode(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_dev, status.st_ino
