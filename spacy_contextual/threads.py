"""Torch's CPU threads in worker processes: no fork-after-OpenMP deadlock, no oversubscription.

The deadlock: the PyPI torch wheels run their intra-op parallelism on GNU OpenMP (libgomp), which
keeps a pool of threads once a parallel region has run (a conv1d, an LSTM, even weight
initialisation). ``fork()`` copies only the calling thread, so a child whose first parallel region
asks for more than one thread waits forever for pool threads that do not exist:
``nlp.pipe(texts, n_process=2)`` hung at 0 % CPU.

The fix, installed by ``install_fork_hooks()`` (the ``models`` package calls it on import):

* before every fork, the forking thread hands its OpenMP pool back (``omp_pause_resource_all``);
  the child starts a fresh pool, and the parent builds a new one on its next parallel region;
* in the child, torch's threads are set to its share of the parent's: ``max(1, T // N)`` for T =
  ``torch.get_num_threads()`` in the parent and N the number of worker processes being started, so
  N processes x threads never exceed the T threads the user gave the parent. N is known while
  spaCy's ``Language.pipe(n_process=N)`` starts its workers; any other fork keeps T (torch's own
  behaviour). Where the pool cannot be handed back (an OpenMP without that call), every forked
  child runs one thread, the only count that cannot deadlock.

Spawned or forkserver workers (``multiprocessing.set_start_method("spawn")``, the default on
Python >= 3.14) start a fresh interpreter, so there is no deadlock; they receive the encoder
pickled, and the encoder's shim sets the same share when it is unpickled (``layers/shim.py``).
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

import torch

OMP_PAUSE_SOFT = 1  # omp_pause_resource_t: free the threads, keep the settings


def _loaded_libgomp() -> ctypes.CDLL | None:
    """The GNU OpenMP runtime this process loaded with torch, if any (Linux: read from /proc)."""
    maps = Path("/proc/self/maps")
    if not maps.is_file():
        return None
    for line in maps.read_text(encoding="utf-8", errors="replace").splitlines():
        path = line.split(maxsplit=5)[-1]
        if "libgomp" in Path(path).name:
            try:
                return ctypes.CDLL(path)
            except OSError:
                return None
    return None


_LIBGOMP = _loaded_libgomp()
_PAUSE = getattr(_LIBGOMP, "omp_pause_resource_all", None) if _LIBGOMP is not None else None
_fork = {"released": True, "share": None}
_installed = False


def spacy_worker_count() -> int | None:
    """N while spaCy's ``Language.pipe(n_process=N)`` is starting (forking or pickling for) its workers."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_multiprocessing_pipe" and frame.f_globals.get("__name__") == "spacy.language":
            count = frame.f_locals.get("n_process")
            return count if isinstance(count, int) and count > 0 else None
        frame = frame.f_back
    return None


def core_share(processes: int) -> int:
    """Threads for each of ``processes`` processes that share the cores this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) // processes)


def worker_share(workers: int | None) -> int | None:
    """Torch threads for each of ``workers`` processes sharing this process's threads (None: unknown)."""
    return None if workers is None else max(1, torch.get_num_threads() // workers)


def _before_fork() -> None:
    _fork["share"] = worker_share(spacy_worker_count())
    _fork["released"] = _LIBGOMP is None or (_PAUSE is not None and _PAUSE(OMP_PAUSE_SOFT) == 0)


def _in_child() -> None:
    if not _fork["released"]:
        torch.set_num_threads(1)
    elif _fork["share"] is not None:
        torch.set_num_threads(_fork["share"])


def install_fork_hooks() -> None:
    """Register the fork hooks once per process (a no-op where there is no ``fork``)."""
    global _installed
    if not _installed and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_child=_in_child)
        _installed = True
