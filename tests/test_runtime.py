"""The one torch.distributed setup: alone a process is rank 0 of 1; among ranks, a barrier that a rank
does not reach in time fails with a message naming that rank instead of waiting forever."""

import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch

from spacy_contextual.runtime import Runtime, process_rank

pytestmark = pytest.mark.integration  # processes, servers, spacy train or a browser


def test_alone_a_process_is_rank_zero_of_one_and_barriers_return():
    runtime = Runtime.from_environment("cpu")
    assert (runtime.rank, runtime.world_size, runtime.main, runtime.distributed) == (0, 1, True, False)
    assert runtime.device == torch.device("cpu") and process_rank() == 0
    runtime.barrier("nothing", timedelta(seconds=0))
    runtime.close()


def rank_one_is_late(seconds: float) -> None:
    runtime = Runtime.from_environment("cpu")
    try:
        runtime.barrier("the first barrier", timedelta(seconds=60))  # everyone is here
        if runtime.rank == 1:
            time.sleep(200)
        runtime.barrier("the second barrier", timedelta(seconds=seconds))
    finally:
        runtime.close()


@pytest.mark.timeout(240)
def test_a_barrier_timeout_names_the_missing_rank():
    """In an interpreter of its own, as a command runs it (one launch per process: an earlier launch in
    the test process leaves torch elastic's error-file settings behind)."""
    script = (
        "from spacy_contextual.cli.launch import LaunchError, launch_local\n"
        "from test_runtime import rank_one_is_late\n"
        "try:\n"
        "    launch_local(2, rank_one_is_late, 2.0)\n"
        "except LaunchError as error:\n"
        "    print(error)\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parent, capture_output=True, text=True)
    assert "rank 0: rank 1 did not reach the second barrier within 0:00:02" in done.stdout, done.stderr[-2000:]
    assert time.monotonic() - started < 150  # rank 0 did not wait for the 200 s rank 1 sleeps
