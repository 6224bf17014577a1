"""What a step's recurrent product W_h h^T costs at each number of rows, and what ``padded_rows`` saves.

An LSTM step multiplies every row still inside its sentence by W_h (4D x P), so as a length-sorted
batch runs on the row count falls from the batch size to 1. The matrix kernels handle whole blocks of
columns far faster than a remainder; ``models/lstm_steps.py`` therefore plans ``padded_rows(rows)``
columns (a multiple of ``ROW_MULTIPLE``) and drops the extra ones. For every row count from 1 to
``--max-rows`` this times ``torch.mm(W_h, h^T)`` with ``rows`` columns and with ``padded_rows(rows)``
columns (best of 3 repeats of ``--calls`` calls), and reports a sample of row counts and the total over
all of them, which is what a batch whose rows end evenly across that range would spend.

    python -m benchmarks.lstm_rows [--sizes original small] [--precisions fp32 bf16] [--max-rows 256]
        [--threads 2] [--output benchmarks/history/elmo_inference.md]
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from spacy_contextual.models.lstm_steps import ROW_MULTIPLE, padded_rows

from .common import ROOT, SIZES
from .record import publish

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
SAMPLE = (1, 2, 15, 16, 17, 33, 47, 48, 63, 64, 65, 127, 128, 200, 250, 255, 256)


def product_ms(weight: torch.Tensor, rows: int, calls: int) -> float:
    """Best mean milliseconds of ``torch.mm(weight, h)`` with h (P, rows)."""
    h = torch.randn(weight.shape[1], rows).to(weight.dtype)
    torch.mm(weight, h)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            torch.mm(weight, h)
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["original", "small"], choices=["original", "small"])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=list(DTYPES))
    parser.add_argument("--max-rows", type=int, default=256)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", help="record the table as the newest entry of this history file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sample = [rows for rows in SAMPLE if rows <= args.max_rows]
    lines = []
    for size in args.sizes:
        dim, projection = SIZES[size]["lstm_dim"], SIZES[size]["projection_dim"]
        for precision in args.precisions:
            weight = torch.randn(4 * dim, projection).to(DTYPES[precision])
            exact = {rows: product_ms(weight, rows, args.calls) for rows in range(1, args.max_rows + 1)}
            full_precision = precision == "fp32"
            padded = {rows: exact[padded_rows(rows, args.max_rows, full_precision)] for rows in exact}
            cells = " | ".join(f"{exact[rows]:.2f} / {padded[rows]:.2f}" for rows in sample)
            total, total_padded = sum(exact.values()), sum(padded.values())
            lines.append(
                f"| {size} | {precision} | {cells} | {total:.0f} / {total_padded:.0f} ({total / total_padded:.2f}x) |"
            )
            print(lines[-1], flush=True)
    entry = "\n".join(
        [
            f"## {time.strftime('%Y-%m-%d %H:%M')}: W_h h^T per row count, as is / padded to a multiple of "
            f"{ROW_MULTIPLE}\n",
            f"`python -m benchmarks.lstm_rows {' '.join(sys.argv[1:])}`: milliseconds of `torch.mm(W_h, h^T)` "
            f"(W_h 4D x P), torch {torch.__version__}, {args.threads} threads; each cell: rows columns / "
            f"`padded_rows(rows)` columns; the last column sums rows 1 to {args.max_rows}.\n",
            f"| size | precision | {' | '.join(str(rows) for rows in sample)} | all rows |",
            f"|---|---|{'---|' * len(sample)}---|",
            *lines,
        ]
    )
    publish(entry, args.output and ROOT / args.output)


if __name__ == "__main__":
    main()
