"""One prepared GPU check (under 5 minutes on one GPU): CUDA agrees with CPU, and CUDA speed.

1. Exactness: a random small-size biLM (2x1024_128) and the tiny_anchor fixture run on CPU and on
   CUDA over real sentences; all layers must agree to 1e-4.
2. Speed at the original size (2x4096_512, 2 highway, random weights) on the first 2,000 lines of
   lm_corpus valid: tokens/s in fp32 and under bf16 and fp16 autocast (agreement with fp32 reported).
The results are recorded as the newest entry of benchmarks/history/elmo_inference.md (``--output``).

    python benchmarks/gpu_check.py [--lines 2000] [--output FILE.md]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from elmo_speed import SIZES, VALID, random_bilm, read_sentences  # noqa: E402
from record import HISTORY, record_entry  # noqa: E402

from spacy_contextual.embedders.elmo import ElmoEmbedder  # noqa: E402
from spacy_contextual.formats.bilm_tf import load_bilm_tf  # noqa: E402

ANCHOR = VALID.parents[2] / "elmo_fixtures" / "tiny_anchor"


def max_difference(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return max(float(np.abs(x - y).max()) if x.size else 0.0 for x, y in zip(a, b, strict=True))


def speed(embedder: ElmoEmbedder, sentences: list[list[str]]) -> tuple[float, list[np.ndarray]]:
    embedder.embed_sentences(sentences[:64])  # warm-up (cuDNN/cuBLAS handles, caches)
    embedder._token_cache.clear()
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = embedder.embed_sentences(sentences, batch_size=256)
    torch.cuda.synchronize()
    return sum(len(s) for s in sentences) / (time.perf_counter() - start), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--output", type=Path, default=HISTORY / "elmo_inference.md", help="history file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_check.py needs a CUDA device; torch sees none")
    sentences = read_sentences(args.lines)
    lines = [
        f"## {time.strftime('%Y-%m-%d')}: GPU check ({torch.cuda.get_device_name(0)}, torch {torch.__version__})\n"
    ]

    check = sentences[:200]
    anchor = (ANCHOR / "options.json", ANCHOR / "weights.hdf5")
    for name, make in [("tiny_anchor", lambda: load_bilm_tf(*anchor)), ("small random", lambda: random_bilm("small"))]:
        cpu = ElmoEmbedder(make()).embed_sentences(check)
        gpu = ElmoEmbedder(make(), device="cuda").embed_sentences(check)
        diff = max_difference(cpu, gpu)
        status = "PASS" if diff <= 1e-4 else "FAIL"
        lines.append(
            f"- CUDA vs CPU, {name}, 200 sentences, all layers: max abs difference {diff:.2e} ({status}, tolerance "
            "1e-4)"
        )
        print(lines[-1], flush=True)

    n_tokens = sum(len(s) for s in sentences)
    lines.append(
        f"\nOriginal size ({SIZES['original']}), random weights, first {args.lines} lines of lm_corpus valid "
        f"({n_tokens} tokens), batch_size 256, max_batch_tokens 16384:\n"
    )
    lines.append("| precision | tokens/s | max abs difference to fp32 |")
    lines.append("|---|---|---|")
    reference = None
    for label, dtype in [("fp32", None), ("bf16 autocast", torch.bfloat16), ("fp16 autocast", torch.float16)]:
        embedder = ElmoEmbedder(random_bilm("original"), device="cuda", max_batch_tokens=16384, autocast_dtype=dtype)
        tokens_per_s, out = speed(embedder, sentences)
        diff = "-" if reference is None else f"{max_difference(reference, out):.2e}"
        reference = reference or out
        lines.append(f"| {label} | {tokens_per_s:.0f} | {diff} |")
        print(lines[-1], flush=True)
    lines.append(f"\nCommand: `python benchmarks/gpu_check.py --lines {args.lines}`\n")
    record_entry(args.output, "\n".join(lines))


if __name__ == "__main__":
    main()
