"""The GPU check of ELMo inference (``ElmoEmbedder``): CUDA agrees with the CPU, and CUDA's speed.

1. Exactness, TF32 off (``torch.backends.cuda.matmul.allow_tf32``, ``torch.backends.cudnn.allow_tf32``):
   the AllenNLP tiny anchor and a random biLM at ``--exact-size`` (small: 2x1024_128) on ``--device``
   and on the CPU, over the first 200 sentences; every layer must agree to 1e-4.
2. Speed of a random biLM at ``--size`` (original: 2x4096_512, 2 highway) on all ``--lines``
   sentences: tokens/s in fp32 without and with TF32, with the weights in bf16 and in fp16
   (``precision``; TF32 on), each with its largest difference to fp32 without TF32.

Inputs come from ``--data`` (``benchmarks/gpu/make_data.py`` writes valid.txt and tiny_anchor/
there). Every row goes to ``--json`` as soon as it is measured; the exit status is 1 if a check
failed. ``benchmarks/gpu/run.sh`` runs this with the rest of the GPU check.

    python -m benchmarks.gpu.elmo_check --data benchmarks/gpu/data --json out/gpu_check.json [--device cuda]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

from spacy_contextual.devices import resolve_device, tf32
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.formats.bilm_tf import load_bilm_tf

from ..common import SIZES, max_difference, random_bilm, read_sentences
from ..record import Results

DATA = Path(__file__).resolve().parent / "data"
TOLERANCE = 1e-4
PRECISIONS = [  # label, the embedder's precision, TF32 allowed
    ("fp32, TF32 off", "fp32", False),
    ("fp32, TF32 on", "fp32", True),
    ("bf16 weights", "bf16", True),
    ("fp16 weights", "fp16", True),
]


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def speed(embedder: ElmoEmbedder, sentences: list[list[str]]) -> tuple[float, list[np.ndarray]]:
    embedder.embed_sentences(sentences[:64])  # warm-up (cuDNN/cuBLAS handles, allocator)
    embedder.token_cache.clear()
    synchronize(embedder.device)
    start = time.perf_counter()
    out = embedder.embed_sentences(sentences, batch_size=256)
    synchronize(embedder.device)
    return sum(len(s) for s in sentences) / (time.perf_counter() - start), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="valid.txt and tiny_anchor/ (make_data.py)")
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N (cpu: the dry run)")
    parser.add_argument("--size", choices=sorted(SIZES), default="original", help="the size whose speed is measured")
    parser.add_argument("--exact-size", choices=sorted(SIZES), default="small", help="the random biLM compared")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here as they come")
    args = parser.parse_args()
    device = resolve_device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    results = Results(args.json, "gpu_check", device=f"{device} ({name})", torch=torch.__version__)
    sentences = read_sentences(args.lines, args.data / "valid.txt")
    check = sentences[:200]

    anchor = args.data / "tiny_anchor"
    models = [("tiny anchor", lambda: load_bilm_tf(anchor / "options.json", anchor / "weights.hdf5"))]
    models.append((f"{args.exact_size} random", lambda: random_bilm(args.exact_size)))
    with tf32(False):
        for label, make in models:
            cpu = ElmoEmbedder(make()).embed_sentences(check)
            here = ElmoEmbedder(make(), device=device).embed_sentences(check)
            difference = max_difference(cpu, here)
            what = f"{device.type} vs cpu, {label}, {len(check)} sentences, all layers, TF32 off: max abs difference"
            results.add(what, f"{difference:.2e}", difference <= TOLERANCE)

    n_tokens = sum(len(s) for s in sentences)
    reference = None
    for label, precision, allow_tf32 in PRECISIONS:
        if precision == "fp16" and device.type != "cuda":
            continue  # fp16 runs on CUDA only (the CPU dry run)
        with tf32(allow_tf32):
            embedder = ElmoEmbedder(random_bilm(args.size), device=device, max_batch_tokens=16384, precision=precision)
            tokens_per_second, out = speed(embedder, sentences)
        reference = reference or out
        what = f"{args.size} size, {label}: tokens/s ({len(sentences)} sentences, {n_tokens} tokens)"
        results.add(
            what, f"{tokens_per_second:,.0f} (max abs difference to fp32: {max_difference(reference, out):.1e})"
        )
        del embedder
    sys.exit(1 if results.failed else 0)


if __name__ == "__main__":
    main()
