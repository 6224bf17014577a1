"""A C++ operator for torch, built once per machine and loaded only as a checked file.

``OperatorBuild`` names one library: a C++ source, the compiler flags of one CPU variant, and the
namespace its operators register in (``torch.ops.<namespace>``). ``load_operators`` builds it with the
system's C++ compiler (``$CXX``, else ``c++``) against torch's headers and libraries, the first time on
a machine, into a folder of torch's extension cache (``extensions_root``: ``TORCH_EXTENSIONS_DIR``, else
``$XDG_CACHE_HOME/torch_extensions``, else ``~/.cache/torch_extensions``, torch's own choice), named by
the torch version, the variant and a digest of the source and flags; later processes load it from there.
The contract:

* **One build, no hang.** A build holds ``fcntl.flock`` on the folder's lock file, which the kernel
  releases when its holder dies: a killed build never blocks the next one. The compiler runs under
  ``BUILD_SECONDS``, and a process waits at most that long for another's build.
* **Trusted like any file we load.** The library is compiled under a working name, renamed into place
  and recorded in ``record.json`` with its size and SHA-256. Loading opens it without following links,
  checks that it is a regular file of this user that no one else can write, in a folder of this user's
  that no one else can write, compares its digest with the record, and loads that very open file
  (``/proc/self/fd``). A truncated or changed library is built again, never loaded; a folder or file of
  another user is refused and nothing in it runs.
* **A failure is remembered.** A failed build is recorded with the compiler's first ``error:`` line and
  the compiler's identity: the process that failed warns once, and later ones go straight on without
  the operator until the source, the flags, torch or the compiler change, or ``force=True`` (what
  ``spacy-contextual build`` does) tries again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

BUILD_SECONDS = 600  # the longest a compiler may run, and the longest a process waits for another's build
RECORD = "record.json"
LOCK = "lock"
WORKING_PREFIX = "building-"
RECORD_BYTES = 2**16  # a record is a few hundred bytes; a larger file is not one of ours
STANDARD_FLAGS = ("-shared", "-fPIC", "-std=c++20", "-O3", "-fopenmp")


class NoCacheFolder(OSError):
    """Neither TORCH_EXTENSIONS_DIR, XDG_CACHE_HOME nor a home folder says where to build."""


@dataclass(frozen=True)
class OperatorBuild:
    name: str  # the library's file name and the prefix of its folder
    source: Path
    variant: str  # the CPU variant the flags are for, e.g. "AVX2"
    flags: tuple[str, ...]  # the variant's compiler flags
    namespace: str  # where its operators register: torch.ops.<namespace>

    @property
    def compile_flags(self) -> list[str]:
        return [
            *STANDARD_FLAGS,
            *self.flags,
            f"-DOPERATOR_NAMESPACE={self.namespace}",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(torch.compiled_with_cxx11_abi())}",
        ]

    def folder(self) -> Path:
        digest = hashlib.sha256(self.source.read_bytes() + " ".join(self.compile_flags).encode()).hexdigest()[:12]
        return extensions_root() / f"{self.name}-torch{torch.__version__}-{self.variant.lower()}-{digest}"

    @property
    def library_name(self) -> str:
        return f"{self.name}.so"


@dataclass(frozen=True)
class BuildState:
    """Where a library stands: ``built`` (recorded, not yet loaded here), ``loaded`` (in this process),
    ``not built``, ``failed`` or ``refused``; ``detail`` says why or how long the build took."""

    state: str
    folder: Path | None
    detail: str = ""

    @property
    def usable(self) -> bool:
        return self.state == "loaded"


def extensions_root() -> Path:
    """torch's cache of built extensions: TORCH_EXTENSIONS_DIR, else torch_extensions in XDG_CACHE_HOME,
    else in ~/.cache (what ``torch.utils.cpp_extension`` chooses)."""
    if os.environ.get("TORCH_EXTENSIONS_DIR"):
        return Path(os.environ["TORCH_EXTENSIONS_DIR"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME")
    if not cache:
        try:
            cache = str(Path.home() / ".cache")
        except RuntimeError as error:  # no HOME and no passwd entry
            raise NoCacheFolder(f"no folder to build in ({error}): set TORCH_EXTENSIONS_DIR") from None
    return Path(cache) / "torch_extensions"


def compiler() -> str | None:
    """The C++ compiler a build runs: ``$CXX`` or ``c++``, as found on the PATH."""
    return shutil.which(os.environ.get("CXX") or "c++")


def compiler_identity() -> str:
    """The compiler's path, size and modification time: a changed compiler is tried again."""
    path = compiler()
    if path is None:
        return "none"
    info = os.stat(path)
    return f"{os.path.realpath(path)}:{info.st_size}:{info.st_mtime_ns}"


def inspect(build: OperatorBuild) -> BuildState:
    """Where ``build`` stands, without building or loading anything."""
    if _loaded.get(build.namespace):
        return _loaded[build.namespace]
    try:
        folder = build.folder()
        _check_folder(folder)
    except NoCacheFolder as error:
        return BuildState("refused", None, str(error))
    except UntrustedFile as error:
        return BuildState("refused", error.path, str(error))
    record = _read_record(folder)
    if record.get("state") == "failed" and record.get("compiler") == compiler_identity():
        return BuildState("failed", folder, record.get("error", ""))
    if record.get("state") == "built":
        return BuildState("built", folder, f"built in {record.get('seconds', 0):.1f} s")
    return BuildState("not built", folder, "no C++ compiler found" if compiler() is None else "")


def load_operators(
    build: OperatorBuild, force: bool = False, announce: Callable[[str], None] | None = None
) -> BuildState:
    """Load ``build``'s library into this process, building it first where it is not built (or ``force``).
    Returns the state: ``loaded`` where ``torch.ops.<namespace>`` now holds its operators. ``announce``
    receives a line when a build starts and when it ends."""
    if _loaded.get(build.namespace) and not force:
        return _loaded[build.namespace]
    state = inspect(build)
    if state.state == "built" and not force:
        loaded = _load_recorded(build, state.folder)
        if loaded.state != "not built":
            return loaded
    state = build_library(build, force=force or state.state == "built", announce=announce)
    if state.state != "built":
        return state
    loaded = _load_recorded(build, state.folder)
    if loaded.state == "not built":  # built, but it does not load here: remembered like a failed build
        _write_record(state.folder, {"state": "failed", "error": loaded.detail, "compiler": compiler_identity()})
        return BuildState("failed", state.folder, loaded.detail)
    return loaded


def build_library(
    build: OperatorBuild, force: bool = False, announce: Callable[[str], None] | None = None
) -> BuildState:
    """Compile and record ``build``'s library where it is not built yet (or ``force``), without loading it:
    ``built``, ``failed`` or ``refused``. One process compiles; the others wait for it and take its result."""
    state = inspect(build)
    if state.state in ("refused", "loaded") or (state.state in ("built", "failed") and not force):
        return state
    with _build_lock(state.folder) as locked:
        if not locked:
            return BuildState("failed", state.folder, f"another process held the build lock for {BUILD_SECONDS} s")
        if not force:
            after_wait = inspect(build)
            if after_wait.state in ("built", "failed"):  # another process finished it while this one waited
                return after_wait
        return _compile(build, state.folder, announce)


class UntrustedFile(OSError):
    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path} {reason}: set TORCH_EXTENSIONS_DIR to a folder of your own")
        self.path = path


_loaded: dict[str, BuildState] = {}  # namespace -> its state, once its library is loaded in this process


def _check_folder(folder: Path) -> None:
    """The folder, where it exists, is a real folder of this user's that no one else can write to."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return
    _check_owner(folder, info, stat.S_ISDIR, "folder")


def _check_owner(path: Path, info: os.stat_result, is_kind: Callable[[int], bool], kind: str) -> None:
    if not is_kind(info.st_mode):
        raise UntrustedFile(path, f"is not a {kind} (a link or another kind of file)")
    if info.st_uid != os.geteuid():
        raise UntrustedFile(path, f"belongs to another user (uid {info.st_uid})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedFile(path, "can be written by other users")


def _read_record(folder: Path) -> dict:
    """The folder's record, where it is a small JSON object in a file of this user's; else {}."""
    try:
        descriptor = os.open(folder / RECORD, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {}
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if info.st_uid != os.geteuid() or info.st_size > RECORD_BYTES:
            return {}
        try:
            record = json.loads(file.read(RECORD_BYTES))
        except ValueError:
            return {}
    return record if isinstance(record, dict) else {}


def _write_record(folder: Path, record: dict) -> None:
    working = folder / f"{WORKING_PREFIX}{os.getpid()}-{RECORD}"
    working.write_text(json.dumps(record, indent=1), encoding="utf-8")
    os.replace(working, folder / RECORD)


def _load_recorded(build: OperatorBuild, folder: Path) -> BuildState:
    """Load the recorded library where it is the file the record describes; ``not built`` where it is
    missing, truncated or changed (a build replaces it); ``refused`` where it is not this user's."""
    record = _read_record(folder)
    expected = record.get("library") if record.get("state") == "built" else None
    if not isinstance(expected, dict):
        return BuildState("not built", folder)
    path = folder / build.library_name
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return BuildState("not built", folder, "the recorded library is missing")
    try:
        info = os.fstat(descriptor)
        try:
            _check_owner(path, info, stat.S_ISREG, "regular file")
        except UntrustedFile as error:
            return BuildState("refused", folder, str(error))
        digest = hashlib.sha256()
        with open(descriptor, "rb", closefd=False) as file:
            for chunk in iter(lambda: file.read(2**20), b""):
                digest.update(chunk)
        if info.st_size != expected.get("bytes") or digest.hexdigest() != expected.get("sha256"):
            return BuildState("not built", folder, "the library differs from its record (truncated or changed)")
        try:
            torch.ops.load_library(f"/proc/self/fd/{descriptor}")
        except (OSError, RuntimeError) as error:
            return BuildState("not built", folder, f"the library did not load: {_first_line(str(error))}")
    finally:
        os.close(descriptor)
    state = BuildState("loaded", folder, f"built in {record.get('seconds', 0):.1f} s")
    _loaded[build.namespace] = state
    return state


@contextlib.contextmanager
def _build_lock(folder: Path) -> Iterator[bool]:
    """The folder (made, this user's only) and its build lock held: True, or False after waiting
    ``BUILD_SECONDS`` for another process's build. Working files a killed build left are removed."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    _check_folder(folder)
    descriptor = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + BUILD_SECONDS
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as error:
                if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() > deadline:
                    yield False
                    return
                time.sleep(0.2)
        for leftover in folder.glob(f"{WORKING_PREFIX}*"):
            leftover.unlink(missing_ok=True)
        yield True
    finally:
        os.close(descriptor)  # releases the lock


def _compile(build: OperatorBuild, folder: Path, announce: Callable[[str], None] | None) -> BuildState:
    """Compile the library under a working name, then rename and record it (the caller holds the lock)."""
    cxx = compiler()
    if cxx is None:
        error = f"no C++ compiler found ({os.environ.get('CXX') or 'c++'} is not on the PATH)"
        _write_record(folder, {"state": "failed", "error": error, "compiler": "none"})
        return BuildState("failed", folder, error)
    from torch.utils import cpp_extension  # imports setuptools, only to build

    working = folder / f"{WORKING_PREFIX}{os.getpid()}-{build.library_name}"
    command = [
        cxx,
        *build.compile_flags,
        *(flag for path in cpp_extension.include_paths() for flag in ("-isystem", path)),
        str(build.source),
        "-o",
        str(working),
        *(f"-L{path}" for path in cpp_extension.library_paths()),
        "-lc10",
        "-ltorch_cpu",
        "-ltorch",
        "-lgomp",
    ]
    if announce:
        announce(f"building {build.name} for this CPU ({build.variant}), once: about 30 s, in {folder}")
    started = time.monotonic()
    failed, output = run_compiler(command)
    seconds = time.monotonic() - started
    identity = compiler_identity()
    if failed:
        working.unlink(missing_ok=True)
        error = compiler_error(output)
        _write_record(folder, {"state": "failed", "error": error, "compiler": identity, "seconds": seconds})
        (folder / "build.log").write_text(" ".join(command) + "\n\n" + output, encoding="utf-8")
        return BuildState("failed", folder, error)
    data = working.read_bytes()
    record = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    os.replace(working, folder / build.library_name)
    _write_record(folder, {"state": "built", "library": record, "compiler": identity, "seconds": round(seconds, 1)})
    if announce:
        announce(f"built {build.name} in {seconds:.1f} s")
    return BuildState("built", folder, f"built in {seconds:.1f} s")


def run_compiler(command: list[str]) -> tuple[bool, str]:
    """Run a compiler command under ``BUILD_SECONDS``: (whether it failed, what it printed)."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return True, f"the compiler ran longer than {BUILD_SECONDS} s"
    except OSError as error:  # not an executable
        return True, f"{command[0]}: {error.strerror}"
    return result.returncode != 0, result.stdout + result.stderr


def compiler_error(output: str) -> str:
    """The first line of a compiler's output that names an error, else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return next((line for line in lines if "error:" in line), lines[-1] if lines else "the compiler failed")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"
