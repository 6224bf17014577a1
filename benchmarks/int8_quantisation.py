"""Dynamic int8 quantisation (torch.ao, fbgemm) against fp32 and bf16, in one process: is ``int8`` worth a
precision setting on this machine?

1. The matrix products of one LSTM layer at its real shapes (``models/lstm.py``), y = x W^T for x
   (rows, in) and W (out, in), each timed best of ``--repeat``:
     input   W_x: (4D, P) over a block of rows * 8 steps   (once per block of steps)
     state   W_h: (4D, P) over ``rows``                     (every step)
     proj    W_P: (P, D) over ``rows``                      (every step)
   fp32 ``F.linear``; bf16 ``F.linear`` on bf16 operands; int8 ``torch.ao.nn.quantized.dynamic.Linear``
   (weights quantised once per channel, activations per call, int32 accumulation, float32 out).
2. The bundled ELMo's char-CNN highway and projection (``nn.Linear``) quantised dynamically:
   tokens/s of the whole embedder (token cache off, so the char CNN runs on every token) and the
   per-layer relative error against fp32 on lm_corpus valid. The LSTM products are raw ``addmm``
   calls, not ``nn.Linear``; part 1 measures their speed.
3. The accuracy of the LSTM input products W_x x in int8, the bundled ELMo: W_x quantised per output
   channel (qint8) and each layer's input per call (quint8 with fbgemm's reduced range, as
   ``quantize_per_tensor_dynamic`` does), then dequantised, so that float32 products compute what the
   int8 kernel computes (integer products are exact; only the order of summation differs). The
   input is scaled over a layer's whole batch, where the kernel would scale each block of steps:
   the error of the kernel is at most this one.

    python -m benchmarks.int8_quantisation --lines 100 --repeat 20 [--output benchmarks/history/precision.md]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import torch
from torch import nn
from torch.ao.nn.quantized.dynamic import Linear as DynamicInt8Linear

from .common import VALID, read_sentences, timed_embed
from .precision_accuracy import relative_errors
from .record import publish

SHAPES = {"small": (1024, 128), "original": (4096, 512)}  # (D, P)


def best_seconds(function, repeat: int) -> float:
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def product_speeds(out_dim: int, in_dim: int, rows: int, repeat: int) -> dict[str, float]:
    """GFLOP/s of y = x W^T, (rows, in) x (in, out), in fp32, bf16 and dynamic int8."""
    linear = nn.Linear(in_dim, out_dim, bias=False)
    x = torch.randn(rows, in_dim)
    int8 = DynamicInt8Linear.from_float(quantisable(linear))
    x_bf16, w_bf16 = x.bfloat16(), linear.weight.detach().bfloat16()
    flop = 2 * rows * in_dim * out_dim
    with torch.no_grad():
        runs = {
            "fp32": lambda: nn.functional.linear(x, linear.weight),
            "bf16": lambda: nn.functional.linear(x_bf16, w_bf16),
            "int8": lambda: int8(x),
        }
        return {name: flop / best_seconds(run, repeat) / 1e9 for name, run in runs.items()}


def quantisable(linear: nn.Linear) -> nn.Linear:
    linear.qconfig = torch.ao.quantization.per_channel_dynamic_qconfig
    return linear


def quantise_input(module, args: tuple) -> tuple:
    """A forward pre-hook: the first argument through dynamic quint8 quantisation and back."""
    return torch.quantize_per_tensor_dynamic(args[0], torch.quint8, True).dequantize(), *args[1:]


def quantise_lstm_inputs(bilm) -> None:
    """The LSTM input products of ``bilm`` with int8 numerics (part 3), in place."""
    for lstm in (*bilm.forward_layers, *bilm.backward_layers):
        weight = lstm.input_linearity.weight.data
        scales = weight.abs().amax(dim=1).clamp(min=1e-12) / 127
        zeros = torch.zeros(weight.shape[0], dtype=torch.long)
        weight.copy_(torch.quantize_per_channel(weight, scales, zeros, 0, torch.qint8).dequantize())
        lstm.register_forward_pre_hook(quantise_input)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rows", type=int, default=64, help="active rows of the LSTM batch")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", type=Path, help="record the tables as the newest entry of this history file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.backends.quantized.engine = "fbgemm"
    warnings.simplefilter("ignore")
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: dynamic int8 quantisation vs fp32 and bf16 "
        f"({args.threads} thread(s), torch {torch.__version__}, engine fbgemm)\n",
        f"`python -m benchmarks.int8_quantisation {' '.join(sys.argv[1:])}`\n",
        f"LSTM products at their shapes, {args.rows} active rows (GFLOP/s, best of {args.repeat}; ratio to fp32):\n",
        "| size | product | shape (out x in, rows) | fp32 | bf16 | int8 |",
        "|---|---|---|---|---|---|",
    ]
    for size, (D, P) in SHAPES.items():
        for name, (out_dim, in_dim, rows) in {
            "input": (4 * D, P, 8 * args.rows),
            "state": (4 * D, P, args.rows),
            "proj": (P, D, args.rows),
        }.items():
            speed = product_speeds(out_dim, in_dim, rows, args.repeat)
            cells = " | ".join(f"{speed[k]:.1f} ({speed[k] / speed['fp32']:.2f}x)" for k in ("fp32", "bf16", "int8"))
            lines.append(f"| {size} | {name} | {out_dim} x {in_dim}, {rows} | {cells} |")
            print(lines[-1], flush=True)

    from spacy_contextual.embedders import load_encoder

    sentences = [s for s in read_sentences(args.lines, VALID) if s]
    tokens = sum(map(len, sentences))
    exact_embedder = load_encoder("elmo", token_cache_size=0)
    int8_embedder = load_encoder("elmo", token_cache_size=0)
    encoder = int8_embedder.bilm.token_encoder
    for linear in [*(h.carry for h in encoder.highways), *(h.transform for h in encoder.highways), encoder.projection]:
        quantisable(linear)
    torch.ao.quantization.quantize_dynamic(encoder, {nn.Linear}, inplace=True)
    exact, exact_seconds = timed_embed(exact_embedder, sentences)
    low, low_seconds = timed_embed(int8_embedder, sentences)
    errors = " / ".join(f"{e:.4f}" for e, _ in relative_errors(low, exact))
    lines += [
        "",
        f"Bundled ELMo, first {args.lines} lines of lm_corpus valid ({tokens} tokens), token cache off: "
        f"fp32 {tokens / exact_seconds:,.0f} tokens/s, char-CNN highway + projection int8 "
        f"{tokens / low_seconds:,.0f} tokens/s ({exact_seconds / low_seconds:.2f}x); "
        f"per-layer relative error {errors}.",
    ]
    lstm_int8 = load_encoder("elmo", token_cache_size=0)
    quantise_lstm_inputs(lstm_int8.bilm)
    low, _ = timed_embed(lstm_int8, sentences)
    errors = " / ".join(f"{e:.4f}" for e, _ in relative_errors(low, exact))
    lines += [
        "",
        f"The LSTM input products W_x x in int8 (part 3 of the docstring; the char CNN in float32): per-layer "
        f"relative error {errors}.",
    ]
    publish("\n".join(lines) + "\n", args.output)


if __name__ == "__main__":
    main()
