"""Would CoVe run faster on ELMo's LSTM path? One CoVe layer as torch's ``nn.LSTM`` against the same
weights in two ``ProjectedLSTM`` (``models/lstm.py``: sorted transposed steps and the fused cell).

CoVe's encoder is ``nn.LSTM(300, 300, bidirectional=True)`` run on a ``PackedSequence``
(``models/mtlstm.py``). Here its weights are copied into a forward and a backward ``ProjectedLSTM``
(gate order i, f, g, o -> i, j, f, o; the two biases summed; no projection, no clipping, no forget
bias), and the two paths run alternately, under ``torch.no_grad()``, on the same batch: the lengths of
the first ``--rows`` lines of lm_corpus valid, random 300-d inputs, weights in ``--precision``. Their
outputs are compared, and the median milliseconds per call reported.

    python -m benchmarks.cove_lstm [--rows 256] [--precisions fp32 bf16] [--rounds 15] [--threads 2]
        [--output benchmarks/history/cove.md]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from spacy_contextual.models.bilm import reverse_padded
from spacy_contextual.models.lstm import ProjectedLSTM

from .common import read_sentences
from .record import publish

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
WIDTH = 300


def projected_copy(lstm: nn.LSTM, suffix: str) -> ProjectedLSTM:
    """One direction of ``lstm`` (``""`` or ``"_reverse"``) as a ``ProjectedLSTM`` computing the same function."""

    def elmo_order(tensor: torch.Tensor) -> torch.Tensor:  # torch's i, f, g, o -> bilm-tf's i, j (= g), f, o
        i, f, g, o = tensor.chunk(4)
        return torch.cat([i, g, f, o])

    copy = ProjectedLSTM(WIDTH, WIDTH, WIDTH, forget_bias=0.0)
    weights = {name: getattr(lstm, f"{name}_l0{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    with torch.no_grad():
        copy.input_linearity.weight.copy_(elmo_order(weights["weight_ih"]))
        copy.state_linearity.weight.copy_(elmo_order(weights["weight_hh"]))
        copy.state_linearity.bias.copy_(elmo_order(weights["bias_ih"] + weights["bias_hh"]))
    return copy


def measure(rows: int, precision: str, rounds: int) -> dict[str, float]:
    torch.manual_seed(0)
    dtype = DTYPES[precision]
    lengths = torch.tensor([len(sentence) + 2 for sentence in read_sentences(rows)])
    inputs = torch.randn(rows, int(lengths.max()), WIDTH) * 0.5
    lstm = nn.LSTM(WIDTH, WIDTH, batch_first=True, bidirectional=True).eval()
    forward, backward = projected_copy(lstm, ""), projected_copy(lstm, "_reverse")
    lstm, forward, backward, inputs = lstm.to(dtype), forward.to(dtype), backward.to(dtype), inputs.to(dtype)

    def torch_lstm() -> torch.Tensor:
        packed = pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
        return pad_packed_sequence(lstm(packed)[0], batch_first=True, total_length=inputs.shape[1])[0]

    def elmo_path() -> torch.Tensor:
        backward_out = backward(reverse_padded(inputs, lengths), lengths)[0]
        return torch.cat([forward(inputs, lengths)[0], reverse_padded(backward_out, lengths)], -1)

    paths = {"nn.LSTM": torch_lstm, "ProjectedLSTM + fused cell": elmo_path}
    times: dict[str, list[float]] = {name: [] for name in paths}
    with torch.no_grad():
        difference = float((torch_lstm().float() - elmo_path().float()).abs().max())
        for round_ in range(rounds + 1):
            for name in list(paths)[:: 1 if round_ % 2 else -1]:
                start = time.perf_counter()
                paths[name]()
                if round_:  # the first round warms up
                    times[name].append(time.perf_counter() - start)
    return {**{name: 1000 * statistics.median(seconds) for name, seconds in times.items()}, "difference": difference}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=list(DTYPES))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, help="record the run in this history file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: one CoVe layer, nn.LSTM against ProjectedLSTM with the fused cell",
        "",
        f"`python -m benchmarks.cove_lstm --rows {args.rows} --rounds {args.rounds} --threads {args.threads}`: "
        f"the lengths of the first {args.rows} lines of lm_corpus valid, 300-d inputs, both directions, "
        "median ms per call.",
        "",
        "| precision | nn.LSTM | ProjectedLSTM + fused cell | ratio | largest difference |",
        "|---|---|---|---|---|",
    ]
    for precision in args.precisions:
        result = measure(args.rows, precision, args.rounds)
        torch_ms, ours_ms = result["nn.LSTM"], result["ProjectedLSTM + fused cell"]
        lines.append(
            f"| {precision} | {torch_ms:.1f} | {ours_ms:.1f} | {torch_ms / ours_ms:.2f}x | {result['difference']:.1e} |"
        )
    publish("\n".join(lines), args.output)


if __name__ == "__main__":
    main()
