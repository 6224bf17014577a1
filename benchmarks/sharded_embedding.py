"""Corpus embedding with ``spacy-contextual elmo``: tokens/s with 1 and 2 processes, and peak memory
against the input's size (it must not grow: the same peak within 10 % for 10,000 and 100,000 lines).

The model: random weights at the small size (``common.random_bilm("small")``). Input: the first
N lines of ../shared/data/lm_corpus/train.txt.gz, as a .gz file. Every run is the command itself,
in a fresh process; tokens/s are the input's tokens over the whole process's wall time (start-up,
loading and writing included), peak RSS is the largest process's (``os.wait4``: the launcher or a
rank). Speed: one process with 1 thread and ``--processes 2`` (one thread each; with
``--with-threads`` also one process with a thread per core), taking turns ``--rounds`` times, the
fastest round of each reported. Memory: ``--top``
on ``--memory-lines`` (10,000 and 100,000 by default) with the process counts of ``--memory-processes``.

    python -m benchmarks.sharded_embedding [--speed-lines 3000] [--memory-lines 10000 100000]
        [--memory-processes 2] [--output benchmarks/history/elmo_inference.md]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .processes import SHARED_DATA, measure, save_random_model
from .record import record_entry

TRAIN = SHARED_DATA / "lm_corpus" / "train.txt.gz"


def first_lines(lines: int, path: Path, cycle: int | None = None) -> tuple[int, int]:
    """Write the first ``lines`` lines of the training corpus to ``path`` (.gz), or with ``cycle`` its
    first ``cycle`` lines over and over; (their token count, the longest line's)."""
    tokens = longest = 0
    with gzip.open(TRAIN, "rt", encoding="utf-8") as source, gzip.open(path, "wt", encoding="utf-8") as out:
        pool = itertools.cycle(list(itertools.islice(source, cycle))) if cycle else source
        for line in itertools.islice(pool, lines):
            out.write(line)
            tokens += len(line.split())
            longest = max(longest, len(line.split()))
    return tokens, longest


def run(args: list[str], threads: int | None, cwd: Path) -> tuple[float, float, float]:
    """(seconds, peak RSS in MB of the largest process, tokens/s of the embedding itself) of
    ``spacy-contextual ARGS``; the last is what rank 0's progress bar showed at the end (all ranks,
    from the bar's start, after the model loaded, to the last part)."""
    env = {name: value for name, value in os.environ.items() if name != "OMP_NUM_THREADS"}
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    seconds, rss, stderr, _ = measure([sys.executable, "-m", "spacy_contextual", *args], env, cwd)
    rates = re.findall(r"([\d,]+) tokens/s", stderr)
    return seconds, rss, float(rates[-1].replace(",", "")) if rates else float("nan")


def embed_args(corpus: Path, out: Path, model: Path, mode: str, processes: int) -> list[str]:
    """The command line of a fresh run: OUTPUT and the parts of an earlier run are deleted first."""
    out.unlink(missing_ok=True)
    shutil.rmtree(f"{out}.parts", ignore_errors=True)
    args = ["elmo", str(corpus), str(out), mode, "--model", str(model)]
    return [*args, "--processes", str(processes)] if processes > 1 else args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speed-lines", type=int, default=3000)
    parser.add_argument("--memory-lines", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--memory-processes", type=int, nargs="*", default=[2])
    parser.add_argument(
        "--cycle-lines",
        type=int,
        help="memory inputs repeat the first this many lines (the same sentences, so the same longest one, "
        "at every size); default: the first N lines",
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--with-threads",
        action="store_true",
        help="also one process with a thread per core (crawls on a shared machine)",
    )
    parser.add_argument("--output", type=Path, help="record the run in this history file")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sharded_embedding_"))
    model = save_random_model("small", work / "small")
    cores = len(os.sched_getaffinity(0))
    lines = f"`python -m benchmarks.sharded_embedding --speed-lines {args.speed_lines} --memory-lines "
    lines += f"{' '.join(map(str, args.memory_lines))} --memory-processes {' '.join(map(str, args.memory_processes))}"
    lines += f" --cycle-lines {args.cycle_lines}" if args.cycle_lines else ""
    lines += " --with-threads`" if args.with_threads else "`"
    report = [lines + f"; small size, random weights; {cores} cores.", ""]

    if args.speed_lines:
        report += speed_table(args, work, model, cores)
    source = (
        f"the first {args.cycle_lines} lines of lm_corpus train, repeated" if args.cycle_lines else "the first N lines"
    )
    report += [
        f"Memory: `elmo --top` on N lines ({source}; .gz input); peak RSS of the largest process.",
        "",
        "| processes | lines | tokens | longest line (tokens) | seconds | peak RSS MB |",
        "|---|---|---|---|---|---|",
    ]
    for processes in args.memory_processes:
        for count in args.memory_lines:
            corpus = work / f"train_{count}.txt.gz"
            tokens, longest = first_lines(count, corpus, args.cycle_lines)
            print(f"memory: {processes} process(es), {count} lines: load average {os.getloadavg()[0]:.2f}", flush=True)
            seconds, rss, _ = run(embed_args(corpus, work / "memory.hdf5", model, "--top", processes), None, work)
            print(f"  {seconds:.1f} s, {rss:.0f} MB", flush=True)
            report.append(f"| {processes} | {count} | {tokens} | {longest} | {seconds:.0f} | {rss:.0f} |")
    table = "\n".join(report)
    print(table)
    if args.output:
        heading = f"## {time.strftime('%Y-%m-%d')}: corpus embedding with 1 and 2 processes, memory against input size"
        record_entry(args.output, f"{heading}\n\n{table}")


def speed_table(args, work: Path, model: Path, cores: int) -> list[str]:
    """The speed rows: each setup ``args.rounds`` times in turn, the fastest round of each."""
    corpus = work / f"train_{args.speed_lines}.txt.gz"
    tokens, _ = first_lines(args.speed_lines, corpus)
    setups = {"1 process, 1 thread": (1, 1), "`--processes 2`": (2, None)}
    if args.with_threads:
        setups[f"1 process, {cores} threads"] = (1, cores)
    best: dict[str, tuple[float, float, float]] = {}
    for round_ in range(args.rounds):
        print(f"speed round {round_ + 1}: load average {os.getloadavg()[0]:.2f}", flush=True)
        for name, (processes, threads) in setups.items():
            measured = run(embed_args(corpus, work / "speed.hdf5", model, "--all", processes), threads, work)
            best[name] = min(best.get(name, measured), measured)
            seconds, rss, rate = measured
            whole = f"{tokens / seconds:,.0f} tokens/s whole process"
            print(f"  {name}: {seconds:.1f} s, {whole}, {rate:,.0f} tokens/s embedding, {rss:.0f} MB", flush=True)
    baseline = tokens / best["1 process, 1 thread"][0]
    return [
        f"Speed: `elmo --all`, first {args.speed_lines} lines of lm_corpus train ({tokens} tokens), whole process, "
        f"fastest of {args.rounds} rounds.",
        "",
        "| run | seconds | tokens/s, whole process | vs 1 process, 1 thread | tokens/s, embedding (progress bar) "
        "| vs 1 process, 1 thread | peak RSS MB (largest process) |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {name} | {s:.1f} | {tokens / s:,.0f} | {tokens / s / baseline:.2f}x | {rate:,.0f} | "
            f"{rate / best['1 process, 1 thread'][2]:.2f}x | {rss:.0f} |"
            for name, (s, rss, rate) in best.items()
        ),
        "",
    ]


if __name__ == "__main__":
    main()
