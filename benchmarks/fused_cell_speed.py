"""One LSTM cell step after the products: the fused cell (``models/lstm_cell.cpp``) against the torch
operations it replaces, at ELMo's shapes.

For z^T (4D, columns) and c^T (D, columns): the gates, the cell update, the clipping and o * tanh(c)
(``models/lstm.py``). "torch operations" is the inference engine's in-place step (``torch_cell_step`` of
``models/lstm_inference.py``) on float32 gates; with bf16 weights it first widens the bf16 product and
adds b (what ``low_precision_product`` does there). "fused cell" is one call of the operator, which reads the bf16
product and adds b itself. Both run alternately; the median milliseconds per step are reported.

    python -m benchmarks.fused_cell_speed [--dims 4096 1024] [--columns 256 64] [--threads 2]
        [--output benchmarks/history/elmo_inference.md]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from spacy_contextual.models.fused_cell import cell_operator
from spacy_contextual.models.lstm import ProjectedLSTM
from spacy_contextual.models.lstm_inference import torch_cell_step

from .record import publish

CLIP = 3.0


def step_times(D: int, columns: int, dtype: torch.dtype, repeats: int = 50) -> dict[str, float]:
    torch.manual_seed(0)
    lstm = ProjectedLSTM(16, D, 16, cell_clip=CLIP).to(dtype)  # only its sizes and clip are used
    cell_step = torch_cell_step(lstm, columns)
    product = (torch.randn(4 * D, columns) * 3).to(dtype)
    bias = torch.randn(4 * D)
    c = torch.randn(D, columns)
    gates = torch.empty(4 * D, columns)
    h = torch.empty(D, columns, dtype=dtype)
    low_precision = dtype != torch.float32
    operator = cell_operator()

    def torch_operations() -> None:
        if low_precision:  # the widening and the bias: part of the step before the fused cell
            gates.copy_(product).add_(bias[:, None])
        cell_step(gates, c)

    def fused() -> None:
        operator(product, bias if low_precision else None, c, CLIP, h)

    paths = {"torch operations": torch_operations, "fused cell": fused}
    times: dict[str, list[float]] = {name: [] for name in paths}
    for round_ in range(repeats + 1):
        for name, run in paths.items():
            if not low_precision:  # the float32 product is the gates, which the torch step changes in place
                gates.copy_(product)
            start = time.perf_counter()
            run()
            if round_:
                times[name].append(time.perf_counter() - start)
    return {name: 1000 * statistics.median(seconds) for name, seconds in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dims", type=int, nargs="+", default=[4096, 1024], help="cell widths D")
    parser.add_argument("--columns", type=int, nargs="+", default=[256, 64])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if cell_operator() is None:
        raise SystemExit("the fused cell could not be built here (see the warning above)")
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: one LSTM cell step, torch operations against the fused cell",
        "",
        f"`python -m benchmarks.fused_cell_speed --threads {args.threads}`: median ms per step (with bf16 "
        "weights the torch side includes widening the product and adding b, as the layer did it).",
        "",
        "| D | columns | weights | torch operations | fused cell | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for D in args.dims:
        for columns in args.columns:
            for dtype in (torch.float32, torch.bfloat16):
                ms = step_times(D, columns, dtype)
                name = "bf16" if dtype == torch.bfloat16 else "fp32"
                torch_ms, fused_ms = ms["torch operations"], ms["fused cell"]
                lines.append(
                    f"| {D} | {columns} | {name} | {torch_ms:.3f} | {fused_ms:.3f} | {torch_ms / fused_ms:.2f}x |"
                )
    publish("\n".join(lines), args.output)


if __name__ == "__main__":
    main()
