"""``--processes N``: run a command as N ranks on this machine with torchrun's own launcher.

``torch.distributed.launcher.api.elastic_launch`` with the settings of ``torchrun --standalone``: a
rendezvous on a free local port, N workers with RANK, WORLD_SIZE, LOCAL_RANK set, and when one fails
the others are stopped. Each worker gets cores / N threads unless OMP_NUM_THREADS is set. A worker's
expected error (a ``ContextualError`` or ``OSError``) comes back as one error naming its rank; a
worker killed by a signal is reported as such (rerun the command to continue where it stopped).

SIGINT and SIGTERM, to the launcher or to a worker, stop the run: the workers clean up and exit
quietly, and the launcher raises ``Interrupted`` (``cli/_app.py``, which does the same for a command
run in one process), reported as one line with exit code 128 + the signal number.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..errors import ContextualError
from ._app import Interrupted, stop_signals_interrupt

LAUNCHER_LOGGERS = ("torch.distributed.elastic", "torch.multiprocessing")


class LaunchError(ContextualError):
    """A rank of a ``--processes`` run failed."""


class ExpectedFailure(Exception):
    """A worker's ContextualError or OSError, marked so that the launcher can tell it from a bug."""


def _worker(entrypoint: Callable, *args) -> None:
    try:
        with stop_signals_interrupt():
            entrypoint(*args)
    except Interrupted as stop:
        sys.exit(128 + stop.signum)  # quietly: the launcher reports it
    except (ContextualError, OSError) as error:
        raise ExpectedFailure(str(error)) from None


def launch_local(processes: int, entrypoint: Callable, *args) -> None:
    """Run ``entrypoint(*args)`` in ``processes`` ranks (spawned, so it must be a module-level function)."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
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
        except SignalException as error:
            raise Interrupted(error.sigval) from None
        except ChildFailedError as error:
            raise _launch_error(error) from None


def _launch_error(error) -> BaseException:
    """One error for the failed ranks: the first rank's expected error, else an interrupt, else the
    first rank's signal or bug (with its traceback)."""
    failures = sorted(error.failures.items())
    expected = f"{ExpectedFailure.__name__}: "
    for rank, failure in failures:
        if _message(failure).get("message", "").startswith(expected):
            return LaunchError(f"rank {rank}: {_message(failure)['message'].removeprefix(expected)}")
    for _, failure in failures:
        if failure.exitcode - 128 in (signal.SIGINT, signal.SIGTERM):
            return Interrupted(failure.exitcode - 128)
    rank, failure = failures[0]
    if failure.signal_name() not in ("", "<N/A>") and failure.exitcode < 0:
        return LaunchError(
            f"rank {rank} was stopped by {failure.signal_name()}; rerun the same command to continue where each "
            "rank stopped"
        )
    details = _message(failure)
    return RuntimeError(
        f"rank {rank} failed: {details.get('message', '')}\n{details.get('extraInfo', {}).get('py_callstack', '')}"
    )


def _message(failure) -> dict:
    return failure.message if isinstance(failure.message, dict) else {"message": str(failure.message)}


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
