"""One ELMo LSTM layer (``models/lstm.py``) from this tree against the same file from another tree, in
one process, call by call: an A/B that a busy, shared machine disturbs less than separate runs.

Both modules get the same random weights at the small (2x1024_128) or original (2x4096_512) size,
cast to ``--precisions`` as the embedder casts them, and the same batch: the lengths of the first
``--rows`` lines of lm_corpus valid (+2 boundaries), random inputs. The two run alternately, the
order swapped every round, under ``torch.no_grad()`` (inference); each call's wall and CPU time is
kept, and the median is reported with the GFLOP/s of its three products (W_x x, W_h h, W_P:
``common.lstm_flops`` for one direction of one layer), and whether the two trees' outputs and final
states are the same bits. Compare with ``sgemm_peak.py --dtype bfloat16``.

    python -m benchmarks.lstm_ab --before TREE [--sizes small original] [--precisions fp32 bf16]
        [--rows 64] [--rounds 15] [--threads 2] [--output benchmarks/history/elmo_inference.md]
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
import types
from pathlib import Path

import torch

from .common import ROOT, SIZES, lstm_flops, read_sentences
from .record import publish

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def load_lstm_module(tree: Path, name: str):
    """``spacy_contextual/models/lstm.py`` of ``tree`` as ``name.models.lstm``, where ``name`` is a package over
    the tree's ``spacy_contextual`` folder whose ``__init__`` is not run (the modules lstm.py imports, and
    only those, are loaded from the tree)."""
    package = types.ModuleType(name)
    package.__path__ = [str(tree / "spacy_contextual")]
    sys.modules[name] = package
    return importlib.import_module(f"{name}.models.lstm")


def check_fused_cells_can_share_a_process(trees: list[Path]) -> None:
    """Each tree's fused cell registers its operator in a namespace (per CPU variant since the cell took
    OPERATOR_NAMESPACE; one namespace before). Two different cells in one namespace cannot be loaded in
    one process: such trees are compared as whole processes instead."""
    namespaces: dict[str, str] = {}
    for tree in trees:
        source = (tree / "spacy_contextual" / "models" / "lstm_cell.cpp").read_text()
        namespace = "per-variant" if "OPERATOR_NAMESPACE" in source else "spacy_contextual"
        if namespaces.setdefault(namespace, source) != source:
            sys.exit(
                "the trees' fused LSTM cells (lstm_cell.cpp) differ and register in one namespace, so one process "
                "can load only one of them: compare them with cli_phases.py --before TREE (a process per run)"
            )


def measure(modules: dict, size: str, precision: str, rows: int, rounds: int) -> dict[str, dict[str, float]]:
    from spacy_contextual.models.bilm import BiLMConfig

    config = BiLMConfig(**SIZES[size])
    P, D = config.projection_dim, config.lstm_dim
    torch.manual_seed(0)
    layers = {}
    for label, module in modules.items():
        torch.manual_seed(0)
        layer = module.ProjectedLSTM(P, D, P, config.cell_clip, config.proj_clip)
        with torch.no_grad():
            for parameter in layer.parameters():
                parameter.mul_(0.5)
        layers[label] = layer.to(DTYPES[precision]).eval()
    lengths = torch.tensor([len(s) + 2 for s in read_sentences(rows)])
    torch.manual_seed(1)
    inputs = torch.randn(rows, int(lengths.max()), P) * (torch.arange(int(lengths.max())) < lengths[:, None])[..., None]
    flops = lstm_flops(config, int(lengths.sum())) / (2 * config.n_layers)
    times: dict[str, dict[str, list[float]]] = {label: {"wall": [], "cpu": []} for label in layers}
    with torch.no_grad():
        first, *others = (layer(inputs, lengths) for layer in layers.values())  # warm-up, and the outputs
        same = all(torch.equal(a, b) for other in others for a, b in zip(flatten(first), flatten(other), strict=True))
        for index in range(rounds):
            for label in list(layers)[:: 1 if index % 2 == 0 else -1]:
                wall, cpu = time.perf_counter(), time.process_time()
                layers[label](inputs, lengths)
                times[label]["wall"].append(time.perf_counter() - wall)
                times[label]["cpu"].append(time.process_time() - cpu)
    result = {}
    for label, kept in times.items():
        wall, cpu = statistics.median(kept["wall"]), statistics.median(kept["cpu"])
        result[label] = {"wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3, "gflops": flops / wall / 1e9, "bitwise": same}
    return result


def flatten(result) -> tuple[torch.Tensor, ...]:
    outputs, (h, c) = result
    return outputs, h, c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="the other source tree")
    parser.add_argument("--sizes", nargs="+", default=["small", "original"], choices=["small", "original"])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=sorted(DTYPES))
    parser.add_argument("--rows", type=int, default=64, help="sentences in the batch")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    check_fused_cells_can_share_a_process([ROOT, args.before])
    modules = {"this tree": load_lstm_module(ROOT, "lstm_here"), "before": load_lstm_module(args.before, "lstm_before")}
    rows = []
    loads = [f"{os.getloadavg()[0]:.1f}"]
    for size in args.sizes:
        for precision in args.precisions:
            result = measure(modules, size, precision, args.rows, args.rounds)
            loads.append(f"{os.getloadavg()[0]:.1f}")
            here, before = result["this tree"], result["before"]
            print(size, precision, result, flush=True)
            rows.append(
                f"| {size} | {precision} | {here['wall_ms']:.1f} / {before['wall_ms']:.1f} | "
                f"**{before['wall_ms'] / here['wall_ms']:.2f}x** | {here['cpu_ms']:.1f} / {before['cpu_ms']:.1f} | "
                f"{before['cpu_ms'] / here['cpu_ms']:.2f}x | {here['gflops']:.0f} / {before['gflops']:.0f} | "
                f"{'yes' if here['bitwise'] else 'no'} |"
            )
    table = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: one LSTM layer, this tree against another, call by call\n",
        f"`python -m benchmarks.lstm_ab {' '.join(sys.argv[1:])}`: {args.rows} sentences of lm_corpus valid, "
        f"median of {args.rounds} alternating calls, {args.threads} threads, torch {torch.__version__}; "
        f"load average {' / '.join(loads)}.\n",
        "| size | precision | ms per call, this / before | speed-up (wall) | CPU ms, this / before | speed-up (CPU) "
        "| GFLOP/s, this / before | outputs bitwise equal |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
    ]
    publish("\n".join(table) + "\n", args.output)


if __name__ == "__main__":
    main()
