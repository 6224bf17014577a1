"""Child processes of the benchmarks: whole-process measurements (wall time and peak RSS of one command),
and benchmark code run in a fresh interpreter (``run_python``).

Peak RSS comes from ``os.wait4`` on the child. Linux carries a process's high-water mark across
``exec``, so a child forked from a process that holds torch would report at least that process's
memory: the measuring process must stay small. It therefore imports neither torch nor the package,
and builds models in a subprocess (``save_random_model``).

A child that runs benchmark code imports this ``benchmarks`` package, and ``spacy_contextual`` from
wherever its ``PYTHONPATH`` says (``--before TREE``: another source tree). ``python -m`` and ``python -c``
put the working directory first on ``sys.path``, before ``PYTHONPATH``: in the repository root that
would be the checkout's ``spacy_contextual``. ``run_python`` therefore runs the child in a scratch
folder that holds only a link to this package.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

PACKAGE = Path(__file__).resolve().parent  # this benchmarks package
SHARED_DATA = PACKAGE.parents[1] / "shared" / "data"


class Measured(NamedTuple):
    seconds: float
    rss_mb: float  # peak RSS of the largest process: the command or one it waited for
    stderr: str
    cpu_s: float  # user + system CPU seconds of the command and the processes it waited for


def measure(command: list[str], env: dict[str, str], cwd: Path) -> Measured:
    """Run ``command`` in ``cwd`` (not the repository root, where ``python -m`` would find the checkout
    before PYTHONPATH) and measure it."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    stderr = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{command} failed: {stderr[-2000:]}")
    return Measured(seconds, usage.ru_maxrss / 1024, stderr, usage.ru_utime + usage.ru_stime)


def run_python(arguments: list[str], **options) -> subprocess.CompletedProcess:
    """``python ARGUMENTS`` (``-m benchmarks.NAME ...`` or ``-c CODE``) in a scratch folder whose only entry is
    a link to this package, so that the child imports these benchmarks and takes ``spacy_contextual``
    from its ``PYTHONPATH`` or the installed package; ``options`` go to ``subprocess.run``."""
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / PACKAGE.name).symlink_to(PACKAGE, target_is_directory=True)
        return subprocess.run([sys.executable, *arguments], cwd=scratch, **options)


def save_random_model(size: str, path: Path) -> Path:
    """``common.random_bilm(size)`` saved as our model directory, built in a subprocess."""
    code = (
        f"from {PACKAGE.name}.common import random_bilm; from spacy_contextual.formats.bilm_dir import save_bilm; "
        f"save_bilm(random_bilm({size!r}), {str(path.resolve())!r})"
    )
    run_python(["-c", code], check=True)
    return path
