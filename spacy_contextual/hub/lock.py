"""The per-model download lock: one process downloads a model, any other waits for it, a bounded time.

The locks live in the cache's own folder ``<home>/.locks/`` (no catalog name starts with a dot), one
``<name>.lock`` per model, kept there so that no process can ever hold a lock on a file that another
one has just deleted. Its holder writes ``<name>.owner`` beside it (pid, host, since when) and
removes it on release, so that a process that waits longer than ``SPACY_CONTEXTUAL_LOCK_WAIT``
seconds stops with one line naming the process it waited for.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ContextualError
from ..text_files import read_json
from .limits import LOCK_WAIT_ENV, limit

LOCKS = ".locks"
GRACE = 1.0  # seconds of waiting before it is reported


class LockWaitError(ContextualError):
    """Another process held a model's download lock for longer than this one may wait."""


def owner_of(path: Path) -> str:
    """The process named by an owner file, in words ("another process" when it cannot be read)."""
    try:
        owner = read_json(path, "", LockWaitError)
        since = time.strftime("%H:%M:%S", time.localtime(float(owner["since"])))
        return f"another process (pid {int(owner['pid'])} on {str(owner['host'])[:64]}, since {since})"
    except (OSError, ValueError, KeyError, TypeError):  # ContextualError is a ValueError
        return "another process"


@contextmanager
def model_lock(home: Path, name: str, report: Callable[[str], None]) -> Iterator[None]:
    """Hold the download lock of model ``name`` in the cache ``home``."""
    from filelock import FileLock, Timeout

    folder = home / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    lock, owner = FileLock(str(folder / f"{name}.lock")), folder / f"{name}.owner"
    wait = limit(LOCK_WAIT_ENV)
    try:
        lock.acquire(timeout=min(GRACE, wait))  # long enough for a new holder to write its owner file
    except Timeout:
        report(f"{name}: {owner_of(owner)} is downloading it; waiting for it to finish (at most {wait:g} s)")
        try:
            lock.acquire(timeout=max(wait - GRACE, 0))
        except Timeout:
            raise LockWaitError(
                f"{name}: {owner_of(owner)} is still downloading it after {wait:g} s of waiting (lock "
                f"{lock.lock_file}); let it finish or stop it, then try again ({LOCK_WAIT_ENV} sets the wait)"
            ) from None
    try:
        owner.write_text(
            json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}), encoding="utf-8"
        )
        yield
    finally:
        owner.unlink(missing_ok=True)
        lock.release()
