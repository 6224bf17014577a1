"""``--processes N``: run a command as N ranks on this machine with torchrun's own launcher.

``torch.distributed.launcher.api.elastic_launch`` with the settings of ``torchrun --standalone``: a
rendezvous on a free local port, N workers with RANK, WORLD_SIZE, LOCAL_RANK set, and when one fails
the others are stopped. Each worker gets cores / N threads unless OMP_NUM_THREADS is set. A worker's
expected error (a ``ContextualError`` or ``OSError``) comes back as one error naming its rank; a
worker killed by a signal is reported as such (rerun the command to continue where it stopped).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..errors import ContextualError

LAUNCHER_LOGGERS = ("torch.distributed.elastic", "torch.multiprocessing")


class LaunchError(ContextualError):
    """A rank of a ``--processes`` run failed."""


class ExpectedFailure(Exception):
    """A worker's ContextualError or OSError, marked so that the launcher can tell it from a bug."""


def _worker(entrypoint: Callable, *args) -> None:
    try:
        entrypoint(*args)
    except (ContextualError, OSError) as error:
        raise ExpectedFailure(str(error)) from None


def launch_local(processes: int, entrypoint: Callable, *args) -> None:
    """Run ``entrypoint(*args)`` in ``processes`` ranks (spawned, so it must be a module-level function)."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    from ..threads import core_share

    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=processes,
        run_id=str(uuid.uuid4()),
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",
        max_restarts=0,
        monitor_interval=0.2,
        start_method="spawn",
    )
    threads = str(core_share(processes))
    with _environment("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", threads)), _quiet_launcher():
        try:
            elastic_launch(config, _worker)(entrypoint, *args)
        except ChildFailedError as error:
            raise _launch_error(error) from None


def _launch_error(error) -> Exception:
    rank, failure = min(error.failures.items())
    if failure.signal_name() not in ("", "<N/A>") and failure.exitcode < 0:
        return LaunchError(
            f"rank {rank} was stopped by {failure.signal_name()}; rerun the same command to continue where each "
            "rank stopped"
        )
    details = failure.message if isinstance(failure.message, dict) else {"message": str(failure.message)}
    message = details.get("message", "")
    expected = f"{ExpectedFailure.__name__}: "
    if message.startswith(expected):
        return LaunchError(f"rank {rank}: {message.removeprefix(expected)}")
    return RuntimeError(f"rank {rank} failed: {message}\n{details.get('extraInfo', {}).get('py_callstack', '')}")


@contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    """``name=value`` in the environment the workers inherit, and as before afterwards."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


@contextmanager
def _quiet_launcher() -> Iterator[None]:
    """The launcher logs each failure with its traceback; the error raised here says it in one line."""
    loggers = [logging.getLogger(name) for name in LAUNCHER_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
