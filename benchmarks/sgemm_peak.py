"""This CPU's matrix-product rate (GFLOP/s = 2*M*K*N / seconds) at the shapes of the ELMo LSTM, in
float32 and (``--dtype bfloat16``) in bf16 with float32 accumulation, torch's bf16 ``mm``.

An (M x K) @ (K x N) product costs 2*M*K*N floating-point operations. Shapes:

* square 2048 and 4096: the machine's practical SGEMM peak;
* (rows x 512) @ (512 x 16384): the original-size LSTM's recurrent product W_h h (rows = active sentences,
  1..64) and, at rows = batch * steps, its input product W_x x for all steps at once;
* (rows x 4096) @ (4096 x 512): the projection W_P;
* the same shapes at the small size (P = 128, D = 1024).

With the weight W stored as ``nn.Linear`` stores it, (N, K), the same product is timed two ways:
``x @ W.t()`` (M, N), as ``nn.Linear`` and the base commit's LSTM compute it, and ``W @ x.t()`` (N, M),
its transpose, as ``models/lstm.py`` now computes the gates (MKL runs the two at different speeds).
Each cell is the best of ``--repeats`` timings after a warm-up.

    python -m benchmarks.sgemm_peak --threads 1 2 [--output benchmarks/history/elmo_inference.md]
    python -m benchmarks.sgemm_peak --threads 1 2 --dtype float32 bfloat16 --only original small  # bf16 vs fp32
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

from .record import publish

SHAPES = [  # (label, M, K, N)
    ("square 2048", 2048, 2048, 2048),
    ("square 4096", 4096, 4096, 4096),
    ("original W_x x, 4096 positions", 4096, 512, 16384),
    ("original W_x x, 256 positions", 256, 512, 16384),
    ("original W_h h, 64 rows", 64, 512, 16384),
    ("original W_h h, 32 rows", 32, 512, 16384),
    ("original W_h h, 8 rows", 8, 512, 16384),
    ("original W_h h, 1 row", 1, 512, 16384),
    ("original W_P, 64 rows", 64, 4096, 512),
    ("original W_P, 8 rows", 8, 4096, 512),
    ("small W_x x, 256 positions", 256, 128, 4096),
    ("small W_h h, 64 rows", 64, 128, 4096),
    ("small W_h h, 8 rows", 8, 128, 4096),
    ("small W_P, 64 rows", 64, 1024, 128),
]


def gflops(m: int, k: int, n: int, weight_left: bool, repeats: int, dtype: torch.dtype = torch.float32) -> float:
    x, weight = torch.randn(m, k, dtype=dtype), torch.randn(n, k, dtype=dtype)
    left, right = (weight, x.t()) if weight_left else (x, weight.t())
    out = torch.empty(left.shape[0], right.shape[1], dtype=dtype)
    flops = 2 * m * k * n
    calls = max(1, int(2e9 // flops))  # about 2 GFLOP per timing
    torch.mm(left, right, out=out)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            torch.mm(left, right, out=out)
        best = min(best, (time.perf_counter() - start) / calls)
    return flops / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dtype", nargs="+", default=["float32"], choices=["float32", "bfloat16"])
    parser.add_argument("--only", nargs="+", default=[""], help="the shapes whose label contains one of these words")
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    args = parser.parse_args()
    torch.manual_seed(0)
    runs = [(dtype, threads) for dtype in args.dtype for threads in args.threads]
    header = "| shape (M x K x N) | " + " | ".join(
        f"{dtype} {t} thread{'s' * (t > 1)}: x @ W.t() / W @ x.t()" for dtype, t in runs
    )
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: GEMM rate of this CPU at the LSTM's shapes ({', '.join(args.dtype)})\n",
        f"`python -m benchmarks.sgemm_peak {' '.join(sys.argv[1:])}`: GFLOP/s of torch.mm, "
        f"torch {torch.__version__}, load average {os.getloadavg()[0]:.2f} at start",
        "",
        header + " |",
        "|---" * (1 + len(runs)) + "|",
    ]
    for label, m, k, n in [shape for shape in SHAPES if any(word in shape[0] for word in args.only)]:
        cells = []
        for dtype_name, threads in runs:
            torch.set_num_threads(threads)
            dtype = getattr(torch, dtype_name)
            cells.append(
                f"{gflops(m, k, n, False, args.repeats, dtype):.0f} / {gflops(m, k, n, True, args.repeats, dtype):.0f}"
            )
        lines.append(f"| {label} ({m} x {k} x {n}) | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    lines.append(f"\nload average {os.getloadavg()[0]:.2f} at end")
    text = "\n".join(lines) + "\n"
    publish(text, args.output)


if __name__ == "__main__":
    main()
