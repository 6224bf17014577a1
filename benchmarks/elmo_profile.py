"""Where the time of ``ElmoEmbedder.iter_embed`` goes: torch.profiler, op time grouped by op and shape.

Random weights at the small or original size (``common.SIZES``), the first ``--lines`` lines of
lm_corpus valid. Two regions are timed as wholes: the char CNN with its word cache
(``TokenVectorCache.token_vectors``) and the LSTM stacks (``BiLM.encode``). Inside each, every op called from
Python is charged its CPU time (children included) under its name and its operand shapes written with
the model's sizes as symbols (P projection, D cell, n anything else), so the LSTM's products read as
what they are. Base commit: ``addmm (n,4D) (n,P) (P,4D)`` is W_h h, ``linear (n,n,P) (4D,P) (4D)`` is
W_x x for all steps, ``mm (n,D) (D,P)`` is W_P. Now: ``addmm (4D,n) (4D,P) (P,n)`` is W_h h^T,
``addmm (4D,1) (4D,P) (P,n)`` is W_x x^T + b for a block of steps, ``mm (n,D) (D,P)`` is W_P.
Region time not inside any op is Python (the step loop and its bookkeeping) plus the profiler's own
cost per op; the same run is also timed without the profiler. The LSTM FLOP/s counts
2 * positions * (P*4D + P*4D + D*P) per direction and layer, positions with the boundaries.

    python -m benchmarks.elmo_profile --size original --lines 300 --threads 1 [--precision bf16] [--top 25]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder  # noqa: E402

from .common import lstm_flops, random_bilm, read_sentences

REGIONS = {"token_vectors": "char CNN + word cache", "encode": "LSTM stacks (BiLM.encode)"}


def instrumented(embedder: ElmoEmbedder) -> ElmoEmbedder:
    """Wrap the two regions in record_function labels (on this instance only)."""
    for owner, name in ((embedder.token_cache, "token_vectors"), (embedder.bilm, "encode")):
        method = getattr(owner, name)

        def wrapped(*args, _method=method, _label=REGIONS[name], **kwargs):
            with record_function(_label):
                return _method(*args, **kwargs)

        setattr(owner, name, wrapped)
    return embedder


def symbolic_shapes(shapes: list, P: int, D: int) -> str:
    """Operand shapes with the model sizes as symbols: [[64, 512], [512, 16384]] -> "(n,P) (P,4D)"."""
    names = {1: "1", P: "P", 2 * P: "2P", D: "D", 2 * D: "2D", 3 * D: "3D", 4 * D: "4D"}
    return " ".join("(" + ",".join(names.get(dim, "n") for dim in shape) + ")" for shape in shapes if shape)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="original", choices=["small", "original"])
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sentences = read_sentences(args.lines)
    bilm = random_bilm(args.size)
    flops = lstm_flops(bilm.config, sum(len(s) + 2 for s in sentences))
    print(
        f"{args.size}, {args.precision}, {args.lines} lines, {args.threads} threads, "
        f"load average {os.getloadavg()[0]:.2f}"
    )

    with torch.no_grad():
        embedder = ElmoEmbedder(bilm, precision=args.precision)
        start = time.perf_counter()
        for _ in embedder.iter_embed(sentences):
            pass
        plain = time.perf_counter() - start
        embedder = instrumented(ElmoEmbedder(bilm, precision=args.precision))
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            start = time.perf_counter()
            for _ in embedder.iter_embed(sentences):
                pass
            profiled = time.perf_counter() - start

    P, D = bilm.config.projection_dim, bilm.config.lstm_dim
    region_total = defaultdict(float)
    by_op = defaultdict(float)
    in_ops = defaultdict(float)
    for event in prof.events():
        if event.name in REGIONS.values():
            region_total[event.name] += event.cpu_time_total / 1e6
        elif event.cpu_parent is not None and event.cpu_parent.name in REGIONS.values():
            region = event.cpu_parent.name
            seconds = event.cpu_time_total / 1e6
            by_op[(region, event.name, symbolic_shapes(event.input_shapes, P, D))] += seconds
            in_ops[region] += seconds

    print(f"\nwhole iter_embed: {plain:.2f} s plain, {profiled:.2f} s under the profiler")
    for label in REGIONS.values():
        print(
            f"  {label}: {region_total[label]:.2f} s, of which in ops {in_ops[label]:.2f} s, "
            f"outside ops (Python + profiler) {region_total[label] - in_ops[label]:.2f} s"
        )
    lstm_seconds = region_total[REGIONS["encode"]]
    print(f"LSTM: {flops / 1e9:.0f} GFLOP; {flops / lstm_seconds / 1e9:.1f} GFLOP/s over the LSTM stacks (profiled)")
    print(f"\ntop {args.top} ops by time (share of the profiled run):")
    for (region, name, shapes), seconds in sorted(by_op.items(), key=lambda item: -item[1])[: args.top]:
        short = "CNN " if region == REGIONS["token_vectors"] else "LSTM"
        print(f"  {seconds:7.2f} s {100 * seconds / profiled:5.1f} %  {short}  {name} {shapes}")


if __name__ == "__main__":
    main()
