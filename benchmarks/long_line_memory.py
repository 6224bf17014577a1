"""Peak memory and time of one very long line (a document with no line breaks) through every path that
embeds it: the corpus command (``spacy-contextual elmo|cove INPUT OUT.hdf5 --all``), the embedder API
(``embed_sentences``), the dashboard's occurrence store, and the spaCy component (``nlp(text)``).

The line is ``--tokens`` distinct made-up words (about 7 bytes each with the space: 130,000 tokens make
a 0.9 MB line). Each path runs in a fresh process; its peak RSS (``os.wait4``) is compared with the same
path run on a one-token line (imports and the model: the baseline) plus the bytes of the output it
writes, (n_layers, n_tokens, width) float32. "extra" = peak - baseline - output: what the long line
costs beyond its own result. The goal: under 1 GiB at 130,000 tokens. ELMo is the bundled model, or a
random one of ``common.SIZES`` (``--elmo-size original``; saved as a model folder); CoVe the bundled
one. The measuring process imports neither torch nor the package (a forked child would carry its
high-water mark, ``processes.py``).

    python -m benchmarks.long_line_memory --tokens 30000 130000 --encoders elmo cove
    python -m benchmarks.long_line_memory --tokens 10000 20000 --encoders elmo --paths embedder \\
        --elmo-size original --precision bf16
    python -m benchmarks.long_line_memory --tokens 130000 --output   # recorded in history/elmo_inference.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .processes import measure, save_random_model
from .record import HISTORY, publish

PATHS = ("cli", "embedder", "dashboard", "pipeline")
ELMO_WIDTHS = {"bundled": 256, "small": 256, "original": 1024}  # 2P
COVE_WIDTH = 600  # 2H


def distinct_words(count: int, seed: int = 0) -> list[str]:
    """``count`` different lowercase words of 3 to 9 letters."""
    rng = random.Random(seed)
    words: dict[str, None] = {}
    while len(words) < count:
        words["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9)))] = None
    return list(words)


CHILD = """
import json, sys, time

def status_mib(field):
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith(field))

def rss_mib():  # the RSS now, after the peak so far is forgotten (Linux: VmHWM starts again from here)
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
        clear.write("5")
    return status_mib("VmRSS:")

path, kind, text_file, model, precision, window = sys.argv[1:7]
text = open(text_file, encoding="utf-8").read().strip()
options = {"precision": precision}
if window != "default":
    options["max_window_tokens"] = int(window)
if path == "pipeline":
    import spacy
    nlp = spacy.blank("en")
    nlp.add_pipe(kind, config={"model": {"name": model, "precision": precision}})
    nlp.initialize()
    before, start = rss_mib(), time.perf_counter()
    n = len(nlp(text))
else:
    from spacy_contextual.embedders import load_encoder
    embedder = load_encoder(kind, model, **options)
    tokens = text.split()
    before, start = rss_mib(), time.perf_counter()
    if path == "embedder":
        n = embedder.embed_sentences([tokens])[0].shape[1]
    else:
        from spacy_contextual.analysis.occurrence_store import OccurrenceStore
        store = OccurrenceStore(embedder.embed_sentences, [{"tokens": tokens}])
        n = store.layers([(0, 0), (0, len(tokens) - 1)]).shape[0] and len(tokens)
seconds = time.perf_counter() - start
print(json.dumps({"tokens": n, "seconds": seconds, "rss_before_mib": before, "line_peak_mib": status_mib("VmHWM:")}))
"""


def run_path(
    path: str, kind: str, text_file: Path, workdir: Path, model: str, precision: str, window: int | None
) -> dict:
    """One path over ``text_file`` in a fresh process: its peak RSS (MiB) and the seconds it ran."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    if path == "cli":
        out = workdir / f"{kind}-{text_file.stem}.hdf5"
        options = ["--model", model, "--precision", precision]
        options += [] if window is None else ["--max-window-tokens", str(window)]
        command = [sys.executable, "-m", "spacy_contextual", kind, str(text_file), str(out), "--all", *options]
        start = time.perf_counter()
        measured = measure(command, env, workdir)
        out.unlink()
        return {"rss_mib": measured.rss_mb, "seconds": time.perf_counter() - start, "above_mib": None}
    command = [sys.executable, "-c", CHILD, path, kind, str(text_file), model, precision, str(window or "default")]
    result = workdir / "result.json"
    with result.open("w") as handle:
        process = subprocess.Popen(command, env=env, cwd=workdir, stdout=handle, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
    stderr = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{path} {kind} failed: {stderr[-2000:]}")
    reported = json.loads(result.read_text().strip().splitlines()[-1])
    above = reported["line_peak_mib"] - reported["rss_before_mib"]  # the line's own peak over what was held before
    return {"rss_mib": usage.ru_maxrss / 1024, "seconds": reported["seconds"], "above_mib": above}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[130_000])
    parser.add_argument("--encoders", nargs="+", choices=["elmo", "cove"], default=["elmo", "cove"])
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--elmo-size", choices=["bundled", "small", "original"], default="bundled")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--window", type=int, default=None, help="max_window_tokens (default: the package's)")
    parser.add_argument("--output", action="store_true", help="record the table in history/elmo_inference.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        one = workdir / "one.txt"
        one.write_text("word\n", encoding="utf-8")
        for kind in args.encoders:
            size = args.elmo_size if kind == "elmo" else "bundled"
            model = "default" if size == "bundled" else str(save_random_model(size, workdir / size))
            width = ELMO_WIDTHS[size] if kind == "elmo" else COVE_WIDTH
            for path in args.paths:
                window = None if path == "pipeline" else args.window
                baseline = run_path(path, kind, one, workdir, model, args.precision, window)["rss_mib"]
                for tokens in args.tokens:
                    line = workdir / f"line-{tokens}.txt"
                    line.write_text(" ".join(distinct_words(tokens)) + "\n", encoding="utf-8")
                    measured = run_path(path, kind, line, workdir, model, args.precision, window)
                    output = 3 * tokens * width * 4 / 2**20
                    extra = measured["rss_mib"] - baseline - output
                    rows.append((kind, size, path, tokens, line.stat().st_size, measured, baseline, output, extra))
                    print(
                        f"{kind} ({size}) {path} {tokens:,} tokens: peak {measured['rss_mib']:,.0f} MiB, baseline "
                        f"{baseline:,.0f}, output {output:,.0f}, extra {extra:,.0f} MiB, the line's own peak "
                        f"{measured['above_mib'] or 0:,.0f}, {measured['seconds']:.1f} s",
                        flush=True,
                    )
    table = [
        "| encoder | path | tokens (bytes) | peak RSS | baseline | output | extra (goal < 1,024) | above RSS before |"
        " seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, size, path, tokens, nbytes, measured, baseline, output, extra in rows:
        above = "-" if measured["above_mib"] is None else f"{measured['above_mib'] - output:,.0f} MiB"
        table.append(
            f"| {kind} ({size}) | {path} | {tokens:,} ({nbytes / 1000:,.0f} KB) | {measured['rss_mib']:,.0f} MiB | "
            f"{baseline:,.0f} MiB | {output:,.0f} MiB | **{extra:,.0f} MiB** | {above} | {measured['seconds']:.0f} |"
        )
    command = "python -m benchmarks.long_line_memory " + " ".join(sys.argv[1:])
    entry = (
        f"## {time.strftime('%Y-%m-%d %H:%M')}: one long line, peak memory per path\n\n"
        f'`{command}`, {args.precision}; one fresh process per row; "extra" = peak RSS - the same path on a '
        'one-token line - the output\'s float32 bytes; "above RSS before" (in-process paths) = the peak RSS while '
        "the line ran (VmHWM reset just before it) - the RSS just before it - the output: a model's load peak "
        "left out.\n\n" + "\n".join(table)
    )
    publish(entry, HISTORY / "elmo_inference.md" if args.output else None)


if __name__ == "__main__":
    main()
