"""The GPU check of biLM training, through ``spacy-contextual pretrain-elmo`` on one device:

1. ``--steps`` steps (dropout 0.1, sampled softmax: both draw from the device's random generator);
2. the same run stopped at half the steps (the stop writes the checkpoint and model/), then
   ``--resume``d to the end: it must end with the weights of run 1 (the checkpoint keeps the GPU's
   random state); tolerance 1e-3, since GPU kernels with atomic adds are not bitwise repeatable;
3. run 1 under ``training.mixed_precision`` (bf16 autocast): tokens/s against fp32, and the
   held-out perplexity of both (evaluated in fp32) within 10 %.

Inputs: ``--data`` (train.txt and valid.txt from ``benchmarks/gpu/make_data.py``); the runs go to
``--work``; every row goes to ``--json`` as it is measured; the exit status is 1 if a check failed.

    python -m benchmarks.gpu.train_check --data benchmarks/gpu/data --work /tmp/train --json out/train.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from safetensors.torch import load_file

from spacy_contextual.models.bilm import BiLMConfig

from ..common import SIZES
from ..record import Results

RESUME_TOLERANCE = 1e-3
PERPLEXITY_TOLERANCE = 0.10
SETTINGS = {  # size: batch tokens, sampled-softmax negatives
    "tiny": (300, 64),
    "small": (4000, 2048),
}


def write_config(path: Path, data: Path, size: str, steps: int, device: str) -> Path:
    batch_tokens, negatives = SETTINGS[size]
    config = {
        "model": BiLMConfig(**SIZES[size]).to_dict(),
        "softmax": {"kind": "sampled", "negatives": negatives},
        "data": {
            "train": [str(data / "train.txt")],
            "valid": str(data / "valid.txt"),
            "valid_sentences": 500,
            "batch_tokens": batch_tokens,
            "min_count": 2,
        },
        "training": {
            "device": device,
            "max_steps": steps,
            "lr_decay_steps": steps,  # the same schedule for the run stopped half-way
            "warmup_steps": steps // 10,
            "dropout": 0.1,
            "checkpoint_minutes": 1e6,
            "validate_minutes": 1e6,
        },
    }
    path.write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    return path


def pretrain(config: Path, output: Path, *overrides: str) -> tuple[dict, str]:
    """One ``pretrain-elmo`` process: its summary.json and its output."""
    command = ["spacy-contextual", "pretrain-elmo", str(config), f"training.output_dir={output}", *overrides]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return json.loads((output / "summary.json").read_text()), done.stdout


def weights(output: Path) -> dict:
    return load_file(str(output / "model" / "model.safetensors"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parent / "data")
    parser.add_argument("--work", type=Path, required=True, help="where the training runs are written")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--size", choices=sorted(SETTINGS), default="small")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results = Results(args.json, "train_check", device=args.device, size=args.size, steps=args.steps)
    args.work.mkdir(parents=True, exist_ok=True)
    config = write_config(args.work / "config.json", args.data, args.size, args.steps, args.device)
    half = args.steps // 2

    started = time.perf_counter()
    straight, _ = pretrain(config, args.work / "straight")
    fp32_rate = straight["tokens"] / straight["train_seconds"]
    results.add(
        f"{args.steps} steps fp32 ({time.perf_counter() - started:.0f} s with start-up): tokens/s; held-out perplexity",
        f"{fp32_rate:,.0f}; {straight['valid']['average']:.1f}",
    )

    stopped, _ = pretrain(config, args.work / "resumed", f"training.max_steps={half}")
    written = all((args.work / "resumed" / name).is_dir() for name in ("checkpoint", "model"))
    results.add(
        f"stopped at step {half}: checkpoint/ and model/ written", str(written), written and stopped["step"] == half
    )
    resumed, log = pretrain(config, args.work / "resumed", "--resume")
    a, b = weights(args.work / "straight"), weights(args.work / "resumed")
    difference = max(float((a[k] - b[k]).abs().max()) for k in a)
    results.add(
        f"resumed at step {half} to {args.steps}: max abs weight difference to the uninterrupted run",
        f"{difference:.2e}",
        f"at step {half}" in log and resumed["step"] == args.steps and difference <= RESUME_TOLERANCE,
    )

    mixed, _ = pretrain(config, args.work / "bf16", "training.mixed_precision=true")
    ratio = mixed["valid"]["average"] / straight["valid"]["average"]
    bf16_rate = mixed["tokens"] / mixed["train_seconds"]
    results.add(
        f"{args.steps} steps bf16 mixed precision: tokens/s (x fp32); held-out perplexity (x fp32)",
        f"{bf16_rate:,.0f} ({bf16_rate / fp32_rate:.2f}x); {mixed['valid']['average']:.1f} ({ratio:.3f}x)",
        abs(ratio - 1) <= PERPLEXITY_TOLERANCE,
    )
    sys.exit(1 if results.failed else 0)


if __name__ == "__main__":
    main()
