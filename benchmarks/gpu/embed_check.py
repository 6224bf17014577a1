"""The GPU check of ``spacy-contextual elmo`` (a file of sentences into HDF5), as a user runs it:

1. the first 100 sentences with ``--device cuda`` (TF32 off: ``NVIDIA_TF32_OVERRIDE=0``) and with
   ``--device cpu``: every dataset equal to 1e-4;
2. all ``--data`` sentences with ``--device cuda``: sentences/s (the wall time of the command,
   start-up included);
3. the sharded path: the same under ``torchrun --nproc_per_node 1`` (one rank on GPU LOCAL_RANK, its
   part files, OUTPUT written by rank 0), and with ``--processes 2`` where torch sees two GPUs or more
   (one rank per GPU, OUTPUT of virtual datasets over the parts): each file equals the one of 2 to
   1e-5, and its time.

Inputs: ``--data`` (valid.txt from ``benchmarks/gpu/make_data.py``); the HDF5 files go to ``--work``;
every row goes to ``--json`` as it is measured; the exit status is 1 if a check failed.

    python -m benchmarks.gpu.embed_check --data benchmarks/gpu/data --work /tmp/embed --json out/embed.json
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import h5py

from ..common import max_difference
from ..record import Results

TOLERANCE = 1e-4
SHARDED_TOLERANCE = 1e-5


def embed(
    source: Path, target: Path, device: str, model: str | None, *extra: str, launcher: tuple = (), **env: str
) -> float:
    """Run the command (after ``launcher``, e.g. torchrun's command line); its wall time in seconds."""
    command = [*launcher, "spacy-contextual", "elmo", str(source), str(target), "--all", "--device", device, *extra]
    command += ["--model", model] if model else []
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env})
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def torch_gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


def file_difference(a: Path, b: Path) -> float:
    """The largest absolute difference between two outputs of the command (inf if their sentences differ)."""
    with h5py.File(a) as first, h5py.File(b) as second:
        keys = [k for k in first if k != "sentence_to_index"]
        if sorted(keys) != sorted(k for k in second if k != "sentence_to_index"):
            return float("inf")
        return max_difference([first[k][()] for k in keys], [second[k][()] for k in keys])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parent / "data")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--model", default=None, help="an ELMo model directory (default: the bundled one)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results = Results(args.json, "embed_check", device=args.device)
    args.work.mkdir(parents=True, exist_ok=True)
    sentences = args.data / "valid.txt"
    lines = sentences.read_text(encoding="utf-8").splitlines()
    subset = args.work / "first100.txt"
    subset.write_text("".join(line + "\n" for line in lines[:100]), encoding="utf-8")

    embed(subset, args.work / "cpu.hdf5", "cpu", args.model)
    embed(subset, args.work / "device.hdf5", args.device, args.model, NVIDIA_TF32_OVERRIDE="0")
    difference = file_difference(args.work / "cpu.hdf5", args.work / "device.hdf5")
    what = f"--device {args.device} vs --device cpu, {min(100, len(lines))} sentences, TF32 off: max abs difference"
    results.add(what, f"{difference:.2e}", difference <= TOLERANCE)

    seconds = embed(sentences, args.work / "all.hdf5", args.device, args.model)
    results.add(
        f"--device {args.device}, {len(lines)} sentences: sentences/s (wall, start-up included)",
        f"{len(lines) / seconds:,.1f}",
    )

    torchrun = (sys.executable, "-m", "torch.distributed.run", "--no-python", "--standalone", "--nproc_per_node", "1")
    sharded = {"torchrun, 1 rank": dict(launcher=torchrun)}
    if args.device.startswith("cuda") and torch_gpu_count() >= 2:
        sharded["--processes 2 (one GPU each)"] = dict(extra=("--processes", "2"))
    for name, how in sharded.items():
        target = args.work / f"sharded_{len(name)}.hdf5"
        seconds = embed(
            sentences, target, args.device, args.model, *how.get("extra", ()), launcher=how.get("launcher", ())
        )
        difference = file_difference(args.work / "all.hdf5", target)
        results.add(
            f"{name}, {len(lines)} sentences: max abs difference to the plain run; sentences/s",
            f"{difference:.2e}; {len(lines) / seconds:,.1f}",
            difference <= SHARDED_TOLERANCE,
        )
    sys.exit(1 if results.failed else 0)


if __name__ == "__main__":
    main()
