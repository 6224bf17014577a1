"""SIGINT and SIGTERM on ``spacy-contextual elmo``, with ``--processes 2`` (a real run of a tiny model)
and in one process: one line "interrupted; run the same command to resume", exit 130 or 143, no
traceback, no temporary file and no process left behind; the same command then finishes the job."""

import gzip
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from util import DATA, tiny_bilm

from spacy_contextual.formats.bilm_dir import save_bilm

pytestmark = pytest.mark.integration  # processes, servers, spacy train or a browser

COMMAND = [sys.executable, "-m", "spacy_contextual", "elmo"]
INTERRUPTED = "interrupted; run the same command to resume"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("signals")
    with gzip.open(DATA / "lm_corpus" / "valid.txt.gz", "rt", encoding="utf-8") as handle:
        lines = [line for _, line in zip(range(300), handle, strict=False)]
    (folder / "corpus.txt").write_text("".join(lines), encoding="utf-8")
    save_bilm(tiny_bilm(), folder / "tiny_elmo")
    return folder


def processes_tagged(tag: str) -> list[int]:
    """Live processes whose environment carries ``tag`` (the command and every process it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and tag.encode() in (entry / "environ").read_bytes():
                if (entry / "stat").read_text().split()[2] != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def messages(stderr: str) -> list[str]:
    return [line for line in re.split(r"[\r\n]", stderr) if line.strip() and not line.startswith("elmo:")]


@pytest.mark.timeout(400)
@pytest.mark.parametrize(
    "signum, processes",
    [pytest.param(signal.SIGINT, 2, marks=pytest.mark.slow), (signal.SIGTERM, 2), (signal.SIGTERM, 1)],
)
def test_a_signal_stops_the_run_with_one_line_and_leaves_nothing(tmp_path, folder, signum, processes):
    out = tmp_path / "out.hdf5"
    tag = f"SPACY_CONTEXTUAL_TEST_{uuid.uuid4().hex}"
    env = {**os.environ, "OMP_NUM_THREADS": "1", tag: "1"}
    args = [folder / "corpus.txt", out, "--top", "--model", folder / "tiny_elmo", "--batch-size", "1"]
    command = [*COMMAND, *map(str, args), "--processes", str(processes)]
    run = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not list(tmp_path.glob("out.hdf5.parts/part-*.hdf5")):  # embedding is under way
        assert run.poll() is None, run.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "no part was written in time"
        time.sleep(0.1)
    run.send_signal(signum)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 128 + signum, stderr[-3000:]
    assert messages(stderr) == [INTERRUPTED], stderr[-3000:]
    deadline = time.monotonic() + 30
    while processes_tagged(tag):
        assert time.monotonic() < deadline, f"processes left behind: {processes_tagged(tag)}"
        time.sleep(0.2)
    assert not list(tmp_path.rglob("*.tmp")) and not out.exists()
    if signum == signal.SIGINT:
        finished = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert finished.returncode == 0, finished.stderr[-3000:]
        assert out.is_file()
