"""Where a whole ``spacy-contextual elmo INPUT OUT.hdf5 --all`` run goes: start-up, imports, load, embed, write.

Every run is a fresh process that runs the real command (the typer app, in that process) with timers
around its phases:

* start-up: the interpreter, until the runner's first line, and the process's exit after its last
  (the process's wall time minus what the runner saw);
* imports: the CLI, the embedder modules and torch (what the command imports before it loads);
* load: ``ElmoEmbedder.load`` / ``from_bilm_tf``, the precision cast included;
* embed: the time inside ``Embedder.iter_embed`` (char CNN, LSTMs, the float32 arrays);
* write: ``PartsFolder.write_part`` and ``write_output`` (the HDF5 part files and the output);
* other: the rest (reading the input, the run record, the progress bar).

Models: random weights (``common.random_bilm``) at the small and original size, as our model
directory (``--format dir``) or bilm-tf ``options.json`` + ``weights.hdf5`` (``--format bilm-tf``),
or an ELMoForManyLangs directory of the published architecture (``--format manylangs``, original size
only, ``common.manylangs_model``), built once under ``--workdir``. Input: the first ``--lines``
lines of lm_corpus valid. ``--before TREE`` runs the same command from another source tree
(``PYTHONPATH=TREE``), alternating with this one, ``--rounds`` times; each is reported by its fastest
round, with the load average before each.

    python -m benchmarks.cli_phases --sizes small original --precisions fp32 bf16 --lines 300 [--before TREE]
        [--format dir] [--rounds 2] [--threads 2] [--output benchmarks/history/elmo_inference.md]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import ROOT, Timer, manylangs_model, model_files
from .processes import run_python
from .record import publish

PHASES = ("start-up", "imports", "load", "embed", "write", "other")


def child(report: Path, command: list[str]) -> None:
    """Run the command in this process, its phases timed, and write them to ``report``."""
    start = time.perf_counter()
    from spacy_contextual.cli import app
    from spacy_contextual.corpus.parts import PartsFolder
    from spacy_contextual.embedders import ElmoEmbedder, Embedder  # the package's names: the same in older trees

    imported = time.perf_counter()
    timer = Timer()
    timer.time_method(ElmoEmbedder, "load", "load")
    timer.time_method(ElmoEmbedder, "from_bilm_tf", "load")
    timer.time_method(Embedder, "iter_embed", "embed", iterator=True)
    timer.time_method(PartsFolder, "write_part", "write")
    timer.time_method(PartsFolder, "write_output", "write")

    def report_phases() -> None:
        seen = {"imports": imported - start, **{phase: timer.seconds[phase] for phase in ("load", "embed", "write")}}
        report.write_text(json.dumps({**seen, "runner": time.perf_counter() - start}))

    try:  # the console script, with its exit (console.py); a tree from before it: the app
        from spacy_contextual.cli.console import main as console_script
    except ImportError:
        try:
            app(command)
        except SystemExit as exit:
            if exit.code:
                raise
        report_phases()
        return
    atexit.register(report_phases)  # console_script runs the exit handlers, then ends the process
    sys.argv = ["spacy-contextual", *command]
    console_script()


def run(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """The command, run by ``child`` in a fresh process: its phases in seconds."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "phases.json"
        begin = time.perf_counter()
        run_python(
            ["-m", __spec__.name, "--child", str(report), *command],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        total = time.perf_counter() - begin
        seen = json.loads(report.read_text())
    phases = {name: seen[name] for name in ("imports", "load", "embed", "write")}
    phases["other"] = seen["runner"] - sum(phases.values())
    phases["start-up"] = total - seen["runner"]
    return {**phases, "total": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["small", "original"], choices=["small", "original"])
    parser.add_argument("--precisions", nargs="+", default=["fp32"], choices=["fp32", "bf16"])
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--format", default="dir", choices=["dir", "bilm-tf", "manylangs"])
    parser.add_argument("--before", type=Path, help="a source tree to run the same command from, alternating")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2, help="OMP/MKL threads of every run")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/cli_speed"))
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1:])
        return
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    trees = {"this tree": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    rows = []
    for size in args.sizes:
        paths = model_files(size, args.lines, args.workdir)
        tokens = sum(len(line.split()) for line in paths["input"].read_text(encoding="utf-8").splitlines())
        if args.format == "dir":
            model = ["--model", str(paths["model"])]
        elif args.format == "manylangs":
            if size != "original":
                parser.error("--format manylangs has the published architecture only: --sizes original")
            model = ["--model", str(manylangs_model(args.workdir))]
        else:
            model = ["--options-file", str(paths["options"]), "--weight-file", str(paths["weights"])]
        for precision in args.precisions:
            out = args.workdir / size / "phases.hdf5"
            command = ["elmo", str(paths["input"]), str(out), "--all", *model]
            command += ["--precision", precision] if precision != "fp32" else []
            best: dict[str, dict[str, float]] = {}
            loads = []
            for _ in range(args.rounds):
                loads.append(f"{os.getloadavg()[0]:.1f}")
                for label, tree in trees.items():
                    out.unlink(missing_ok=True)
                    measured = run(command, {**env, "PYTHONPATH": str(tree)})
                    print(size, precision, label, json.dumps({k: round(v, 3) for k, v in measured.items()}), flush=True)
                    if label not in best or measured["total"] < best[label]["total"]:
                        best[label] = measured
            for label, phases in best.items():
                cells = " | ".join(f"{phases[name]:.2f}" for name in PHASES)
                rate = tokens / phases["embed"]
                rows.append(
                    f"| {size} | {precision} | {label} | {cells} | **{phases['total']:.2f}** | "
                    f"{tokens / phases['total']:,.0f} | {rate:,.0f} | {' / '.join(loads)} |"
                )
    table = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: whole `spacy-contextual elmo --all` run, phase by phase\n",
        f"`python -m benchmarks.cli_phases {' '.join(sys.argv[1:])}`: the first {args.lines} lines of lm_corpus "
        f"valid, random weights ({args.format}), {args.threads} threads; best of {args.rounds} alternating "
        "round(s), seconds.\n",
        "| size | precision | tree | start-up | imports | load | embed | write | other | total | tokens/s "
        "(whole) | tokens/s (embed) | load average |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
    publish("\n".join(table) + "\n", args.output)


if __name__ == "__main__":
    main()
