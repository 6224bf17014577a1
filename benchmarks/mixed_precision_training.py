"""Loss parity of biLM training with ``training.mixed_precision`` (bf16 autocast) against fp32, on the CPU.

A small random biLM is trained twice from the same seed on the first ``--train-lines`` lines of
../shared/data/lm_corpus/train.txt.gz, in fp32 and in bf16, through the trainer (``pretrain``): it
stops every ``--every`` steps (checkpoint, validation) and resumes, so both runs follow the same
learning-rate schedule. The held-out perplexity (first 500 lines of valid, evaluated in fp32) after
each stretch gives the two curves; the table shows them, the relative gap, and tokens/s of each.

    python -m benchmarks.mixed_precision_training --steps 300 --every 50 \
        [--output benchmarks/history/elmo_training.md]
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import torch

from spacy_contextual.models.bilm import BiLMConfig
from spacy_contextual.training.config import PretrainConfig
from spacy_contextual.training.trainer import pretrain

from .common import LM_CORPUS, copy_lines
from .record import publish

MODEL = BiLMConfig(char_embedding_dim=8, filters=[[1, 8], [2, 16], [3, 32]], lstm_dim=64, projection_dim=32)


def train_curve(work: Path, train: Path, valid: Path, steps: int, every: int, mixed_precision: bool) -> dict:
    """Validation perplexity after every ``every`` steps, and tokens/s of the whole run."""
    output = work / ("bf16" if mixed_precision else "fp32")
    curve = []
    for stop in range(every, steps + 1, every):
        config = PretrainConfig.from_dict(
            {
                "model": MODEL.to_dict(),
                "softmax": {"cutoffs": [500, 2000], "div_value": 2.0},
                "data": {"train": [str(train)], "valid": str(valid), "valid_sentences": 500, "batch_tokens": 1000},
                "training": {
                    "output_dir": str(output),
                    "max_steps": stop,
                    "lr_decay_steps": steps,
                    "warmup_steps": steps // 10,
                    "lr": 0.005,
                    "dropout": 0.1,
                    "checkpoint_minutes": 1e6,
                    "validate_minutes": 1e6,
                    "mixed_precision": mixed_precision,
                },
            }
        )
        summary = pretrain(config, resume=stop > every, log=lambda message: None)
        curve.append(summary["valid"]["average"])
    return {"curve": curve, "tokens_per_second": summary["tokens"] / summary["train_seconds"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--train-lines", type=int, default=20000)
    parser.add_argument("--output", type=Path, default=None, help="history file to record the run in")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        train = copy_lines(LM_CORPUS / "train.txt.gz", work / "train.txt", args.train_lines)
        valid = copy_lines(LM_CORPUS / "valid.txt.gz", work / "valid.txt", 500)
        runs = {
            name: train_curve(work, train, valid, args.steps, args.every, name == "bf16") for name in ("fp32", "bf16")
        }
    fp32, bf16 = runs["fp32"], runs["bf16"]
    gaps = [b / f - 1 for f, b in zip(fp32["curve"], bf16["curve"], strict=True)]
    lines = [
        f"## {time.strftime('%Y-%m-%d')}: bf16 mixed-precision training (training.mixed_precision) vs fp32, CPU",
        "",
        f"{platform.machine()} CPU, torch {torch.__version__}, one thread; biLM {MODEL.lstm_dim}-unit LSTMs, "
        f"{MODEL.projection_dim}-d projections, {MODEL.n_filters} char filters, adaptive softmax; the first "
        f"{args.train_lines} lines of lm_corpus train, 1,000-token batches, the same seed; held-out perplexity "
        "on the first 500 lines of valid, evaluated in fp32.",
        "",
        "| step | fp32 perplexity | bf16 perplexity | bf16 / fp32 - 1 |",
        "|---|---|---|---|",
    ]
    for index, (f, b, gap) in enumerate(zip(fp32["curve"], bf16["curve"], gaps, strict=True)):
        lines.append(f"| {(index + 1) * args.every} | {f:.1f} | {b:.1f} | {gap:+.2%} |")
    lines += [
        "",
        f"Largest gap {max(gaps, key=abs):+.2%}. Tokens/s: fp32 {fp32['tokens_per_second']:,.0f}, bf16 "
        f"{bf16['tokens_per_second']:,.0f} (this CPU computes bf16 without bf16 instructions: no speed-up is expected "
        "here; the check is the loss).",
        "",
        f"Command: `python -m benchmarks.mixed_precision_training --steps {args.steps} --every {args.every}`",
    ]
    publish("\n".join(lines), args.output)


if __name__ == "__main__":
    main()
