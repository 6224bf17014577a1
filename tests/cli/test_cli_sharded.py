"""``spacy-contextual elmo`` / ``cove`` shared between processes: 2 CPU ranks (gloo) under torchrun or
``--processes 2`` give the OUTPUT of one process; a run whose launcher or one of whose ranks is
SIGKILLed part way continues on rerun without recomputing what was committed, to the same OUTPUT."""

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from typer.testing import CliRunner
from util import DATA, tiny_bilm, tiny_cove_dir

from spacy_contextual.cli import app
from spacy_contextual.corpus.job import select_layers
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.formats.bilm_dir import save_bilm

pytestmark = pytest.mark.integration  # processes, servers, spacy train or a browser

RUN_SECONDS = 300
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
COMMAND = [sys.executable, "-m", "spacy_contextual"]
HUGE_LINE = " ".join(f"w{i % 97}" for i in range(5000))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("sharded")


@pytest.fixture(scope="module")
def model(folder):
    return save_bilm(tiny_bilm(), folder / "tiny_elmo")


@pytest.fixture(scope="module")
def lines():
    """Real sentences with a blank line and a 5,000-token line among them."""
    with gzip.open(DATA / "lm_corpus" / "valid.txt.gz", "rt", encoding="utf-8") as handle:
        lines = [line.rstrip("\n") for _, line in zip(range(800), handle, strict=False)]
    lines[7], lines[300] = "", HUGE_LINE
    return lines


@pytest.fixture(scope="module")
def corpus(folder, lines):
    path = folder / "corpus.txt.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8")))
    return path


@pytest.fixture(scope="module")
def reference(model, lines):
    """All layers of every line, from the Python API in this process, and the sentence index."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        arrays = ElmoEmbedder.load(model).embed_sentences([line.split() for line in lines], batch_size=8)
    finally:
        torch.set_num_threads(threads)
    return arrays, {" ".join(line.split()): str(i) for i, line in enumerate(lines)}


def one_process(tmp_path, *args):
    out = tmp_path / "one.hdf5"
    result = CliRunner().invoke(app, [str(a) for a in (*args[:1], *args[1:2], out, *args[2:])])
    assert result.exit_code == 0, result.output
    return out


def assert_output_is(path, reference, layers):
    arrays, index = reference
    with h5py.File(path, "r") as f:
        assert set(f) == {*map(str, range(len(arrays))), "sentence_to_index"}
        assert json.loads(f["sentence_to_index"][0]) == index
        for i, array in enumerate(arrays):
            np.testing.assert_allclose(f[str(i)][...], select_layers(array, layers), atol=1e-6, rtol=0)


def run(command, timeout=RUN_SECONDS):
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def assert_same_output(path, reference):
    with h5py.File(path, "r") as f, h5py.File(reference, "r") as g:
        assert set(f) == set(g)
        assert json.loads(f["sentence_to_index"][0]) == json.loads(g["sentence_to_index"][0])
        for key in g:
            if key != "sentence_to_index":
                assert f[key].shape == g[key].shape and f[key].dtype == np.float32
                np.testing.assert_allclose(f[key][...], g[key][...], atol=1e-6, rtol=0)


def committed_parts(output: Path) -> dict[str, tuple[int, int]]:
    """Each whole part's (inode, mtime): unchanged if the rerun did not write it again."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in Path(f"{output}.parts").glob("part-*.hdf5")}


def start_and_kill(command, output, parts_before_kill, pick_victim):
    """Start ``command``, SIGKILL the process ``pick_victim(launcher)`` names once some parts are whole;
    return the launcher's stderr and the parts on disk then."""
    launcher = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + RUN_SECONDS
    while len(committed_parts(output)) < parts_before_kill:
        assert launcher.poll() is None, launcher.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "no part was written in time"
        time.sleep(0.05)
    victim, ranks = pick_victim(launcher)
    os.kill(victim, signal.SIGKILL)
    _, stderr = launcher.communicate(timeout=60)
    assert launcher.returncode != 0
    for pid in ranks:  # no rank runs on after its launcher or a sibling died
        wait_until_gone(pid)
    assert not output.exists(), "the run finished before the kill: give it more lines"
    return stderr, committed_parts(output)


def children(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task")
    return [int(c) for task in tasks.iterdir() for c in (task / "children").read_text().split()]


def ranks_of(launcher) -> dict[int, int]:
    """rank -> pid of the worker processes torchrun started (their environment names the rank)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = {}
        for pid in children(launcher.pid):
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            rank = [item[5:] for item in env if item.startswith(b"RANK=")]
            if rank:
                found[int(rank[0])] = pid
        if len(found) == 2:
            return found
        time.sleep(0.1)
    raise AssertionError("torchrun's workers were not found")


def wait_until_gone(pid: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z":
        assert time.monotonic() < deadline, f"process {pid} is still running"
        time.sleep(0.1)


@pytest.mark.timeout(2 * RUN_SECONDS)
def test_torchrun_two_ranks_equal_one_process(tmp_path, corpus, model, one_thread):
    reference = one_process(tmp_path, "elmo", corpus, "--all", "--model", model, "--batch-size", "8")
    out = tmp_path / "out.hdf5"
    run([*TORCHRUN, "-m", "spacy_contextual", "elmo", corpus, out, "--all", "--model", model, "--batch-size", "8"])
    assert_same_output(out, reference)
    with h5py.File(out, "r") as f:  # virtual datasets over the two ranks' parts, read by plain h5py
        assert f["0"].is_virtual and f["1"].is_virtual and f["300"].shape == (3, 5000, 32)
        assert f["7"].shape == (3, 0, 32)
    assert {name.split("-")[1] for name in committed_parts(out)} == {"00000", "00001"}  # both ranks wrote parts


@pytest.mark.timeout(3 * RUN_SECONDS)
def test_killed_launcher_then_rerun_continues_to_the_same_output(tmp_path, corpus, model, reference):
    """SIGKILL the ``--processes 2`` launcher: its ranks die with it; the rerun keeps every whole part."""
    args = ["elmo", corpus, tmp_path / "out.hdf5", "--top", "--model", model, "--batch-size", "1"]
    command = [str(a) for a in (*COMMAND, *args, "--processes", "2")]

    def launcher_itself(launcher):
        return launcher.pid, children(launcher.pid)

    _, before = start_and_kill(command, tmp_path / "out.hdf5", 3, launcher_itself)
    run(command)
    after = committed_parts(tmp_path / "out.hdf5")
    assert all(after[name] == stamp for name, stamp in before.items()), "a committed part was written again"
    assert len(after) > len(before)
    assert_output_is(tmp_path / "out.hdf5", reference, "top")
    refused = CliRunner().invoke(app, [str(a) for a in args[:3]] + ["--all", "--model", str(model)])
    assert "holds the parts of another run" in refused.stderr


@pytest.mark.slow  # the killed launcher above covers resuming in the default run
@pytest.mark.timeout(3 * RUN_SECONDS)
def test_killed_rank_then_rerun_with_merge(tmp_path, corpus, model, reference):
    """SIGKILL rank 1 under torchrun: torchrun stops rank 0; the rerun (``--merge``) finishes the job."""
    out = tmp_path / "out.hdf5"
    args = ["elmo", corpus, out, "--average", "--model", model, "--batch-size", "1"]
    command = [str(a) for a in (*TORCHRUN, "-m", "spacy_contextual", *args)]

    def rank_one(launcher):
        ranks = ranks_of(launcher)
        return ranks[1], list(ranks.values())

    start_and_kill(command, out, 3, rank_one)
    run([*command, "--merge"])
    assert not Path(f"{out}.parts").exists()  # merged: the parts are gone, OUTPUT stands alone
    with h5py.File(out, "r") as f:
        assert not f["0"].is_virtual
    assert_output_is(out, reference, "average")


@pytest.mark.slow  # the killed launcher above covers resuming in the default run
@pytest.mark.timeout(3 * RUN_SECONDS)
def test_killed_single_process_then_rerun(tmp_path, corpus, model, reference):
    """One process, no torchrun: SIGKILLed part way, the rerun continues and merges as usual."""
    out = tmp_path / "out.hdf5"
    command = [str(a) for a in (*COMMAND, "elmo", corpus, out, "--all", "--model", model, "--batch-size", "1")]

    def launcher_itself(launcher):
        return launcher.pid, []

    _, before = start_and_kill(command, out, 2, launcher_itself)
    assert not out.exists() and before
    run(command)
    assert not Path(f"{out}.parts").exists()
    assert_output_is(out, reference, "all")


@pytest.mark.slow
@pytest.mark.timeout(2 * RUN_SECONDS)
def test_bundled_model_with_two_processes(tmp_path, lines, corpus, one_thread):
    out = tmp_path / "out.hdf5"
    run([str(a) for a in (*COMMAND, "elmo", corpus, out, "--top", "--processes", "2")])
    expected = ElmoEmbedder.load("default").embed_sentences([line.split() for line in lines[:40]])
    with h5py.File(out, "r") as f:
        assert len(f) == len(lines) + 1
        for i, layers in enumerate(expected):
            np.testing.assert_allclose(f[str(i)][...], layers[-1], atol=1e-5)


@pytest.mark.slow
@pytest.mark.timeout(2 * RUN_SECONDS)
def test_cove_with_two_processes(tmp_path, corpus, one_thread):
    model = tiny_cove_dir(tmp_path / "cove")
    reference = one_process(tmp_path, "cove", corpus, "--all", "--model", model)
    out = tmp_path / "out.hdf5"
    done = run([str(a) for a in (*COMMAND, "cove", corpus, out, "--all", "--model", model, "--processes", "2")])
    assert "wrote 800 sentences" in done.stdout
    assert_same_output(out, reference)
