"""Whole-process measurements for the command-line benchmarks: wall time and peak RSS of one command.

Peak RSS comes from ``os.wait4`` on the child. Linux carries a process's high-water mark across
``exec``, so a child forked from a process that holds torch would report at least that process's
memory: the measuring process must stay small. It therefore imports neither torch nor the package,
and builds models in a subprocess (``save_random_model``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "data"


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


def save_random_model(size: str, path: Path) -> Path:
    """``common.random_bilm(size)`` saved as our model directory, built in a subprocess."""
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); from common import random_bilm; "
        f"from spacy_contextual.formats.bilm_dir import save_bilm; save_bilm(random_bilm({size!r}), {str(path)!r})"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    return path
