"""Accuracy of the low precisions against fp32 on real text, per layer, with the speed of each run.

Data: the first N lines of ../shared/data/lm_corpus/valid.txt.gz. Models (``--models``): the bundled
ELMo and CoVe ("bundled"), and ELMo at the small (2x1024_128) and original (2x4096_512) sizes with the
random weights of ``common.py`` ("small", "original"; no trained original-size model is available
offline).
For every layer j, over all tokens of all sentences (h the fp32 vectors, h' the low-precision ones):

    relative error_j  = ||h'_j - h_j||_F / ||h_j||_F
    worst token_j     = max over tokens of ||h'_jk - h_jk|| / ||h_jk||

Precisions: ELMo "bf16" (``ElmoEmbedder(precision="bf16")``: weights cast once, bf16 products,
float32 cell state) and, for comparison, plain bf16 autocast around the fp32 biLM (what the
embedder did before); CoVe "bf16" (autocast). The speeds are tokens/s of the same process, one pass
each after a warm-up batch: on a CPU without native bf16 (see the machine line) bf16 is emulated and
slower than fp32, so only the accuracy carries over to other machines.

    python -m benchmarks.precision_accuracy --lines 300 --threads 1 [--models bundled small original]
        [--output benchmarks/history/precision.md]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from .common import VALID, random_bilm, read_sentences, timed_embed
from .record import publish


def relative_errors(low: list[np.ndarray], exact: list[np.ndarray]) -> list[tuple[float, float]]:
    """(relative error, worst token's relative error) per layer, over all sentences."""
    low_all, exact_all = np.concatenate(low, axis=1), np.concatenate(exact, axis=1)  # (layers, tokens, width)
    diff = np.linalg.norm(low_all - exact_all, axis=-1)
    norm = np.linalg.norm(exact_all, axis=-1)
    per_token = diff / np.maximum(norm, 1e-12)
    return [
        (float(np.sqrt((d**2).sum() / (n**2).sum())), float(t.max()))
        for d, n, t in zip(diff, norm, per_token, strict=True)
    ]


MODELS = ("bundled", "small", "original")


def precision_runs(model: str) -> dict[tuple[str, str], tuple]:
    """(model name, precision) -> (a function making the embedder, the context it runs in)."""
    from spacy_contextual.embedders import ElmoEmbedder, load_encoder

    def elmo(precision: str = "fp32"):
        if model == "bundled":
            return lambda: load_encoder("elmo", precision=precision, token_cache_size=0)
        return lambda: ElmoEmbedder(random_bilm(model), precision=precision, token_cache_size=0)

    name = "ELMo" if model == "bundled" else f"ELMo {model} (random weights)"
    runs = {
        (name, "fp32"): (elmo(), None),
        (name, "bf16"): (elmo("bf16"), None),
        (name, "bf16 autocast (before)"): (elmo(), torch.autocast("cpu", dtype=torch.bfloat16)),
    }
    if model == "bundled":
        runs[("CoVe", "fp32")] = (lambda: load_encoder("cove"), None)
        runs[("CoVe", "bf16")] = (lambda: load_encoder("cove", precision="bf16"), None)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=["bundled"])
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")  # the once-per-process "bf16 is emulated here" warning

    sentences = [s for s in read_sentences(args.lines, VALID) if s]
    tokens = sum(map(len, sentences))
    runs = {key: run for model in args.models for key, run in precision_runs(model).items()}
    results = {key: timed_embed(embedder(), sentences, context) for key, (embedder, context) in runs.items()}
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: precision accuracy, {', '.join(sorted({m for m, _ in runs}))}, "
        f"bf16 vs fp32 ({args.threads} thread(s), torch {torch.__version__})\n",
        f"`python -m benchmarks.precision_accuracy {' '.join(sys.argv[1:])}`: the first {args.lines} lines of "
        f"lm_corpus valid ({len(sentences)} sentences, {tokens} tokens). Relative error per layer = "
        "||low - fp32||_F / ||fp32||_F over all tokens; worst token = the largest per-token relative error. "
        "Speeds are one pass each in this process (token cache off for ELMo).\n",
        "| model | precision | tokens/s | vs fp32 | relative error per layer | worst token per layer |",
        "|---|---|---|---|---|---|",
    ]
    for (model, precision), (arrays, seconds) in results.items():
        exact, exact_seconds = results[(model, "fp32")]
        errors = relative_errors(arrays, exact)
        lines.append(
            f"| {model} | {precision} | {tokens / seconds:,.0f} | {exact_seconds / seconds:.2f}x | "
            f"{' / '.join(f'{e:.4f}' for e, _ in errors)} | {' / '.join(f'{w:.4f}' for _, w in errors)} |"
        )
    publish("\n".join(lines) + "\n", args.output)


if __name__ == "__main__":
    main()
