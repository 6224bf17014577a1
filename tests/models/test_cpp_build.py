"""Building and loading a C++ operator (``models/cpp_build.py``) as a hostile machine would test it.

Each test builds a tiny library (a constructor that appends to a file named by an environment variable,
so a test sees whether its code ran) with the system's compiler, or a stand-in compiler script, into an
extension cache of its own: a build is recorded with its digest and loaded without compiling again; a
failed build is remembered (one compiler run, until the compiler changes or a forced build); a killed
build leaves no lock that hangs the next; a truncated library is built again, never loaded; a folder
or library of another user (planted where the folder name is predictable) is refused and its code
never runs. The cache follows torch's choice of folder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from spacy_contextual.models import cpp_build
from spacy_contextual.models.cpp_build import OperatorBuild, compiler, extensions_root, inspect, load_operators

REAL_COMPILER = compiler()  # before any test points CXX at a stand-in
pytestmark = pytest.mark.integration
needs_compiler = pytest.mark.skipif(REAL_COMPILER is None, reason="needs a C++ compiler ($CXX, or c++ on the PATH)")
SOURCE = textwrap.dedent(
    """
    #include <cstdio>
    #include <cstdlib>
    __attribute__((constructor)) static void ran() {
      if (const char* path = std::getenv("PROBE_RAN")) {
        if (std::FILE* file = std::fopen(path, "a")) { std::fputs(PROBE_TEXT "\\n", file); std::fclose(file); }
      }
    }
    """
)
OTHER_USER = 65534  # nobody


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "extensions"
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(root))
    monkeypatch.setenv("PROBE_RAN", str(tmp_path / "ran.txt"))
    monkeypatch.setattr(cpp_build, "_loaded", {})  # as a new process (the probes have no operators to clash)
    return root


def probe(tmp_path: Path, text: str = "ours") -> OperatorBuild:
    """A library whose constructor writes ``text`` to $PROBE_RAN (each text its own namespace and folder)."""
    source = tmp_path / f"probe_{text}.cpp"
    source.write_text(SOURCE)
    return OperatorBuild("probe", source, "DEFAULT", (f'-DPROBE_TEXT="{text}"',), f"probe_{text}")


def runs(tmp_path: Path) -> list[str]:
    ran = tmp_path / "ran.txt"
    return ran.read_text().split() if ran.exists() else []


def counting_compiler(tmp_path: Path, fail: str | None = None) -> Path:
    """A compiler script that logs each run, then fails printing ``fail`` or runs the real c++."""
    script = tmp_path / "cxx"
    action = f"echo {fail!r} >&2; exit 1" if fail else f'exec {REAL_COMPILER} "$@"'
    script.write_text(f"#!/bin/sh\necho run >> {tmp_path / 'compiler_runs'}\n{action}\n")
    script.chmod(0o755)
    return script


def compiler_runs(tmp_path: Path) -> int:
    log = tmp_path / "compiler_runs"
    return len(log.read_text().split()) if log.exists() else 0


@needs_compiler
@pytest.mark.timeout(120)
def test_a_library_is_built_once_recorded_with_its_digest_and_loaded_from_the_record(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", str(counting_compiler(tmp_path)))
    build = probe(tmp_path)
    assert inspect(build).state == "not built"
    state = load_operators(build)
    assert state.state == "loaded" and runs(tmp_path) == ["ours"]
    folder = build.folder()
    assert folder.parent == cache and stat.S_IMODE(folder.stat().st_mode) == 0o700
    record = json.loads((folder / "record.json").read_text())
    library = (folder / "probe.so").read_bytes()
    assert record["state"] == "built" and record["library"]["bytes"] == len(library)
    assert not list(folder.glob("building-*"))  # the working name is gone
    cpp_build._loaded.clear()  # as a new process: loaded from the record, no compiler run
    assert load_operators(build).state == "loaded" and compiler_runs(tmp_path) == 1


@needs_compiler
@pytest.mark.timeout(120)
def test_a_failed_build_is_remembered_until_the_compiler_changes_or_a_forced_build(cache, tmp_path, monkeypatch):
    compiler = counting_compiler(tmp_path, fail="probe.cpp:3:1: error: no such thing")
    monkeypatch.setenv("CXX", str(compiler))
    build = probe(tmp_path)
    state = load_operators(build)
    assert (state.state, state.detail) == ("failed", "probe.cpp:3:1: error: no such thing")
    assert "error: no such thing" in (build.folder() / "build.log").read_text()  # the whole output, kept
    for _ in range(3):  # later processes: no compiler run, the same answer
        assert load_operators(build).detail == state.detail and inspect(build).state == "failed"
    assert compiler_runs(tmp_path) == 1
    assert load_operators(build, force=True).state == "failed" and compiler_runs(tmp_path) == 2
    counting_compiler(tmp_path)  # a new compiler (the same path, new contents): tried again, and it builds
    assert load_operators(build).state == "loaded" and compiler_runs(tmp_path) == 3


def test_no_compiler_is_said_as_such(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    state = load_operators(probe(tmp_path))
    assert state.state == "failed" and state.detail.startswith("no C++ compiler found (no-such-compiler-here")


KILLED_BUILD = """
import sys
from pathlib import Path
from spacy_contextual.models.cpp_build import OperatorBuild, load_operators
load_operators(OperatorBuild("probe", Path(sys.argv[1]), "DEFAULT", ('-DPROBE_TEXT="ours"',), "probe_ours"))
"""


@needs_compiler
@pytest.mark.timeout(120)
def test_a_build_killed_midway_leaves_nothing_that_hangs_or_breaks_the_next(cache, tmp_path, monkeypatch):
    """SIGKILL while the compiler runs: the kernel drops the lock with its holder, the next process builds
    at once, and the killed one's working files are removed."""
    slow = tmp_path / "slow_cxx"
    slow.write_text(f'#!/bin/sh\ntouch {tmp_path / "started"}\nsleep 30\nexec {REAL_COMPILER} "$@"\n')
    slow.chmod(0o755)
    build = probe(tmp_path)
    env = {**os.environ, "CXX": str(slow)}
    killed = subprocess.Popen([sys.executable, "-c", KILLED_BUILD, str(build.source)], env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    (build.folder() / "building-123-probe.so").write_bytes(b"half")  # what a cut-short compiler leaves
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    started = time.monotonic()
    assert load_operators(build).state == "loaded" and time.monotonic() - started < 30
    assert not list(build.folder().glob("building-*"))


@needs_compiler
@pytest.mark.timeout(120)
def test_a_truncated_library_is_built_again_never_loaded(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", str(counting_compiler(tmp_path)))
    build = probe(tmp_path, "first")
    assert load_operators(build).usable
    library = build.folder() / "probe.so"
    # A full disk, a cut copy: a new file in its place. (Cutting the file itself would cut the library this
    # process has mapped, and the process would die of SIGBUS at exit.)
    cut = library.with_name("cut.so")
    cut.write_bytes(library.read_bytes()[: library.stat().st_size // 2])
    os.replace(cut, library)
    cpp_build._loaded.clear()
    assert inspect(build).state == "built"  # the record says built; loading checks the file first
    assert load_operators(build).state == "loaded"
    assert compiler_runs(tmp_path) == 2  # built again: a half library would have been SIGBUS


@needs_compiler
@pytest.mark.skipif(os.geteuid() != 0, reason="planting a file of another user needs root (chown)")
def test_a_library_planted_by_another_user_is_refused_and_never_runs(cache, tmp_path, monkeypatch):
    """The folder name is predictable; another user makes it first, with a library and a matching record.
    Nothing in it runs; the same holds for a planted library in a folder of ours and for a folder that
    other users can write to."""
    planted = probe(tmp_path, "planted")
    assert load_operators(planted).usable and runs(tmp_path) == ["planted"]  # a real library, and its record
    build = probe(tmp_path, "victim")
    folder = build.folder()
    shutil.copytree(planted.folder(), folder)  # its library under our library's name, with a matching record
    for path in (folder, *folder.iterdir()):
        os.chown(path, OTHER_USER, OTHER_USER)
    state = load_operators(build)
    assert state.state == "refused" and "belongs to another user" in state.detail
    assert "TORCH_EXTENSIONS_DIR" in state.detail and runs(tmp_path) == ["planted"]

    os.chown(folder, os.geteuid(), os.getegid())  # our folder, their library and record: not trusted, built anew
    assert load_operators(build).state == "loaded" and runs(tmp_path) == ["planted", "victim"]
    cpp_build._loaded.clear()
    folder.chmod(0o777)  # a folder other users can write to
    state = load_operators(build)
    assert state.state == "refused" and "can be written by other users" in state.detail
    assert runs(tmp_path) == ["planted", "victim"]


def test_the_cache_follows_torchs_choice_of_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert extensions_root() == tmp_path / "xdg" / "torch_extensions"
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "mine"))
    assert extensions_root() == tmp_path / "mine"
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert extensions_root() == tmp_path / "home" / ".cache" / "torch_extensions"
