"""Start-up of the command line: whole-process time of ``spacy-contextual --help``, of embedding one
sentence, and of the small-size run (``elmo --all`` on the first 1,000 lines of lm_corpus valid),
for this tree and another (``--before``) in one run.

The model: random weights at the small size (``common.random_bilm("small")``: 2x1024_128,
2048-filter CNN, 1 highway) saved as our model directory. Each command is a fresh process
(``python -m spacy_contextual ...`` with ``PYTHONPATH`` naming the tree); seconds are its wall time,
peak RSS comes from ``os.wait4`` (``processes.py``). The trees take turns, ``--rounds`` times, and each command is
reported by its fastest round (other jobs share the CPU; the load average is printed). Also listed:
which heavy modules ``import spacy_contextual.cli`` (what ``--help`` runs) loads in each tree.

    git archive main spacy_contextual | tar -x -C /tmp/before
    python -m benchmarks.cli_startup --before /tmp/before [--rounds 3] [--output benchmarks/history/elmo_inference.md]
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .processes import SHARED_DATA, measure, save_random_model
from .record import record_entry

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "spacy", "thinc", "h5py", "numpy", "tqdm")


def heavy_imports(tree: Path, cwd: Path) -> list[str]:
    """The modules of HEAVY that ``import spacy_contextual.cli`` loads from ``tree`` (checked to be the one used)."""
    code = (
        "import sys, spacy_contextual.cli; print(spacy_contextual.__file__); "
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(tree)},
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    origin, modules = done.stdout.split("\n")[:2]
    if not Path(origin).resolve().is_relative_to(tree):
        raise RuntimeError(f"PYTHONPATH={tree} imported spacy_contextual from {origin}")
    return modules.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="the other source tree (PYTHONPATH)")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", type=Path, help="record the run in this history file")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cli_startup_"))
    model = save_random_model("small", work / "small")
    with gzip.open(SHARED_DATA / "lm_corpus" / "valid.txt.gz", "rt", encoding="utf-8") as source:
        text = [line for _, line in zip(range(args.lines), source, strict=False)]
    (work / "one.txt").write_text(text[0], encoding="utf-8")
    (work / "corpus.txt").write_text("".join(text), encoding="utf-8")
    embed = ["--all", "--model", str(model)]
    commands = {
        "`--help`": ["--help"],
        "`elmo --all`, 1 sentence": ["elmo", str(work / "one.txt"), str(work / "o.hdf5"), *embed],
        f"`elmo --all`, {args.lines} lines": ["elmo", str(work / "corpus.txt"), str(work / "o.hdf5"), *embed],
    }
    trees = {"before": args.before.resolve(), "after": ROOT}
    imports = {name: " ".join(heavy_imports(tree, work)) or "none of them" for name, tree in trees.items()}
    best: dict[tuple[str, str], tuple[float, float]] = {}
    for round_ in range(args.rounds):
        print(f"round {round_ + 1}: load average {os.getloadavg()[0]:.2f}", flush=True)
        for name, command in commands.items():
            for tree_name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": str(args.threads)}
                seconds, rss, *_ = measure([sys.executable, "-m", "spacy_contextual", *command], env, work)
                key = (name, tree_name)
                best[key] = min(best.get(key, (seconds, rss)), (seconds, rss))
                print(f"  {name} [{tree_name}]: {seconds:.2f} s, {rss:.0f} MB", flush=True)
    tokens = sum(len(line.split()) for line in text)
    rows = [
        f"| {name} | {best[name, 'before'][0]:.2f} | {best[name, 'after'][0]:.2f} | "
        f"{best[name, 'before'][0] / best[name, 'after'][0]:.2f}x | {best[name, 'before'][1]:.0f} | "
        f"{best[name, 'after'][1]:.0f} |"
        for name in commands
    ]
    table = "\n".join(
        [
            f"`python -m benchmarks.cli_startup --before {args.before} --rounds {args.rounds} --threads "
            f"{args.threads}`; {args.lines} lines = {tokens} tokens; fastest of {args.rounds} rounds.",
            "",
            "| command (whole process) | before s | after s | speed-up | before peak RSS MB | after peak RSS MB |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
            f"Heavy modules loaded by `import spacy_contextual.cli` (what `--help` runs): before: "
            f"{imports['before']}; after: {imports['after']}.",
        ]
    )
    print(table)
    if args.output:
        heading = f"## {time.strftime('%Y-%m-%d')}: command-line start-up, before and after"
        record_entry(args.output, f"{heading}\n\n{args.threads} thread(s).\n\n{table}")


if __name__ == "__main__":
    main()
