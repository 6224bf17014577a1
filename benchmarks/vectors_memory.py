"""Peak memory of loading a GloVe-format text file into spaCy ``Vectors``, against the table's size.

GloVe 840B is 2.2M x 300 (2.6 GB as float32); the loader must not hold it twice. This writes a
synthetic GloVe text file of ``--rows`` x 300 random values (words ``w0``, ``w1``, ...), then, in a
fresh process, measures the peak resident memory of ``load_vectors`` and of ``to_spacy_vectors``
above the process's baseline, divided by the float32 table's bytes: ~1.0 means one copy.

    python -m benchmarks.vectors_memory --rows 400000
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .processes import run_python

DIM = 300


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_synthetic(path: Path, rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8") as out:
        for start in tqdm(range(0, rows, 10_000), desc="writing synthetic GloVe", unit_scale=10_000):
            block = rng.normal(scale=0.4, size=(min(10_000, rows - start), DIM)).astype(np.float32)
            out.writelines(f"w{start + i} " + " ".join(f"{v:.5f}" for v in row) + "\n" for i, row in enumerate(block))


def measure(path: Path) -> dict:
    """Run in a fresh process: baseline RSS, then the peaks after each step."""
    import spacy  # noqa: F401  (imported before the baseline so its own memory is not counted)

    from spacy_contextual.formats.word_vectors import load_vectors, to_spacy_vectors

    baseline = _rss_mb()
    started = time.perf_counter()
    static = load_vectors(path)
    load_seconds = time.perf_counter() - started
    table_mb = static.vectors.nbytes / 2**20
    after_load_peak = _peak_mb()
    vectors = to_spacy_vectors(static)
    shares = bool(np.shares_memory(vectors.data, static.vectors))
    return {
        "rows": len(static.words),
        "table_mb": round(table_mb, 1),
        "load_seconds": round(load_seconds, 1),
        "load_peak_over_table": round((after_load_peak - baseline) / table_mb, 2),
        "spacy_vectors_peak_over_table": round((_peak_mb() - baseline) / table_mb, 2),
        "spacy_vectors_shares_the_array": shares,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--measure", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "glove.synthetic.300d.txt"
        write_synthetic(path, args.rows)
        print(f"{path.stat().st_size / 2**30:.2f} GiB of text, {args.rows} x {DIM}", file=sys.stderr)
        result = run_python(["-m", __spec__.name, "--measure", str(path)], check=True, capture_output=True, text=True)
        print(result.stdout.strip())


if __name__ == "__main__":
    main()
