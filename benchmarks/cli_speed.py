"""Whole-process time and peak RSS of ``spacy-contextual elmo INPUT OUT.hdf5 --all`` against AllenNLP 2.10.1.

Random weights (``common.random_bilm``) at the small size (2x1024_128, 2048-filter CNN, 1 highway)
and the original size (2x4096_512, 2 highway), saved twice: as our model directory (for
``spacy-contextual elmo --model DIR``) and as bilm-tf ``options.json`` + ``weights.hdf5`` (for
``allennlp_elmo.py``, AllenNLP's ``_ElmoBiLm`` in its own venv). Input: the first lines of
../shared/data/lm_corpus/valid.txt.gz. Ours runs as ``python -m spacy_contextual elmo ...``, each tree
through its own entry point (what the ``spacy-contextual`` script runs, its exit included). Every
command is a fresh process; seconds are wall time of the
whole process (imports, loading, writing HDF5), peak RSS and CPU seconds come from ``os.wait4`` on that
process. The commands of one size run alternately, ``--rounds`` times, and each is reported by its
fastest round; the load average before each round is printed, since other jobs share the CPU.

``--precision bf16`` runs our command with ``--precision bf16`` (AllenNLP stays float32): on a CPU with
AMX or AVX-512 BF16 (``spacy-contextual info`` says) that is the fast path; elsewhere it is emulated.

``--cell-off`` also runs our command with the fused LSTM cell switched off (``SPACY_CONTEXTUAL_FUSED_CELL=0``),
so that one run shows whether the cell helps on this CPU. ``--isa avx2`` runs every command as an AVX2-only
CPU would (``ATEN_CPU_CAPABILITY``, ``MKL_ENABLE_INSTRUCTIONS``, ``ONEDNN_MAX_CPU_ISA``; AllenNLP's torch
honours them too), and the machine line says so.

``--before TREE`` also runs our CLI from another source tree (``PYTHONPATH=TREE``), e.g. the base
commit unpacked with ``git archive BASE | tar -x -C TREE``, to measure before and after in one run.

    python -m benchmarks.cli_speed --allennlp-python /work/venvs/allennlp/bin/python [--before /tmp/base]
        [--cell-off] [--isa avx2] [--sizes small original] [--rounds 2] [--threads 2]
        [--output benchmarks/history/elmo_inference.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import h5py

from .common import LM_CORPUS, ROOT, model_files
from .processes import measure
from .record import publish

HERE = Path(__file__).resolve().parent
LINES = {"small": 1000, "original": 300}
ISAS = {
    "native": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
}


def run(command: list[str], env: dict[str, str]) -> dict:
    measured = measure(command, env, Path("/"))
    return {"seconds": measured.seconds, "peak_rss_mb": measured.rss_mb, "cpu_s": measured.cpu_s}


def commands(paths: dict[str, Path], out: Path, args: argparse.Namespace) -> dict[str, tuple[list[str], dict, Path]]:
    """name -> (command, environment, the HDF5 file it writes)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if args.threads:
        env.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    ours = [sys.executable, "-m", "spacy_contextual", "elmo", str(paths["input"])]  # the tree's own entry point
    model = ["--all", "--model", str(paths["model"])]
    if args.precision != "fp32":  # a --before tree may predate the option
        model += ["--precision", args.precision]
    here = {**env, "PYTHONPATH": str(ROOT)}
    result = {"this tree": ([*ours, str(out / "ours.hdf5"), *model], here, out / "ours.hdf5")}
    if args.cell_off:
        off = {**here, "SPACY_CONTEXTUAL_FUSED_CELL": "0"}
        result["this tree, cell off"] = ([*ours, str(out / "off.hdf5"), *model], off, out / "off.hdf5")
    if args.before:
        before_env = {**env, "PYTHONPATH": str(args.before)}
        result["before"] = ([*ours, str(out / "before.hdf5"), *model], before_env, out / "before.hdf5")
    if args.allennlp_python:
        allennlp = [args.allennlp_python, str(HERE / "allennlp_elmo.py"), str(paths["options"]), str(paths["weights"])]
        command = [*allennlp, str(paths["input"]), str(out / "allennlp.hdf5")]
        result["AllenNLP 2.10.1"] = (command, env, out / "allennlp.hdf5")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["small", "original"], choices=sorted(LINES))
    parser.add_argument("--allennlp-python", help="python of a venv holding allennlp==2.10.1")
    parser.add_argument("--before", type=Path, help="a source tree to run our CLI from as 'before'")
    parser.add_argument("--lines", type=int, help="input lines for every size (default: small 1000, original 300)")
    parser.add_argument("--corpus", default="valid", choices=["valid", "train"], help="lm_corpus file (valid: 5,000)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, help="OMP/MKL threads for every process (default: torch's)")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"], help="our command's --precision")
    parser.add_argument("--cell-off", action="store_true", help="also run ours with the fused LSTM cell off")
    parser.add_argument("--isa", choices=sorted(ISAS), default="native", help="run every command as this CPU")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/cli_speed"))
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    args = parser.parse_args()
    os.environ.update(ISAS[args.isa])  # every command inherits it, and the machine line names it

    table = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: whole-process `spacy-contextual elmo --all` against AllenNLP 2.10.1\n",
        f"`python -m benchmarks.cli_speed {' '.join(sys.argv[1:])}` ({time.strftime('%Y-%m-%d %H:%M')}, "
        f"{platform.machine()}, {os.cpu_count()} cores, threads: {args.threads or 'default'})\n",
        "| size | lines | command | seconds (best) | tokens/s | all rounds | peak RSS (MB) | CPU s "
        "| load before each round |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for size in args.sizes:
        lines = args.lines or LINES[size]
        paths = model_files(size, lines, args.workdir, LM_CORPUS / f"{args.corpus}.txt.gz")
        tokens = len(paths["input"].read_text(encoding="utf-8").split())
        runs = commands(paths, args.workdir / size, args)
        results: dict[str, list[dict]] = {name: [] for name in runs}
        loads = []
        for _ in range(args.rounds):
            loads.append(f"{os.getloadavg()[0]:.2f}")
            for name, (command, env, _) in runs.items():
                results[name].append(run(command, env))
                print(f"{size} {name}: {results[name][-1]}", flush=True)
        for _, _, path in runs.values():
            with h5py.File(path, "r") as written:
                if len(written) != lines + 1:
                    raise RuntimeError(f"{path} holds {len(written)} datasets, expected {lines} + 1")
        for name, rounds in results.items():
            best = min(rounds, key=lambda r: r["seconds"])
            every = " / ".join(f"{r['seconds']:.1f}" for r in rounds)
            table.append(
                f"| {size} | {lines} | {name} | {best['seconds']:.1f} | {tokens / best['seconds']:,.0f} | "
                f"{every} | {max(r['peak_rss_mb'] for r in rounds):.0f} | "
                f"{best['cpu_s']:.1f} | {' / '.join(loads)} |"
            )
    table.append(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    text = "\n".join(table) + "\n"
    publish(text, args.output)


if __name__ == "__main__":
    main()
