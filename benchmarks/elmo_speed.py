"""ELMo inference speed: the CLI path (ElmoEmbedder) against a plain PyTorch reference, same run.

Data: the first N lines of ../shared/data/lm_corpus/valid.txt.gz (real sentences, 1-196 tokens).
Weights: random, at the small (2x1024_128, 2048-filter CNN, 1 highway) and original
(2x4096_512, 2 highway) sizes.

* exact path: ``ElmoEmbedder.iter_embed`` with the tree's default batching (here 256 rows under
  8192 padded positions, ``batching.py``): length-sorted batches under a token budget, char CNN once
  per distinct word (LRU cache), clipped projected LSTMs that skip padding.
* plain reference: batches of 64 in file order; the char CNN for every token; ``torch.nn.LSTM(proj_size=P)``
  stacks with ELMo's topology (separate forward and backward stacks, residual on layer 2), packed
  sequences, no clipping, no caching.

The clock runs over the embedding of the sentences only, from a cold start (the first call of a new
embedder, its weights already cast to the precision). Each measurement runs in its own process so
that its peak RSS is its own; besides wall time it reports the process's CPU time over the same span,
which other jobs on the machine disturb less. For the exact path the time inside ``BiLM.encode`` (the
LSTM stacks) and inside the char CNN with its word cache are also timed, and their FLOP/s reported:
the LSTMs do 2 * positions * (P*4D + P*4D + D*P) per direction and
layer (positions with the boundaries, padding not counted), the CNN 2 * multiply-adds of the
convolutions and linear layers it actually ran (counted by forward hooks). Compare with
``benchmarks/sgemm_peak.py``. ``--before TREE`` also runs the exact path from another source tree
(``PYTHONPATH=TREE``, e.g. the base commit unpacked with ``git archive BASE | tar -x -C TREE``).

    python -m benchmarks.elmo_speed --lines 2000 --threads 2 [--sizes small original] [--before TREE]
        [--output benchmarks/history/elmo_inference.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .common import ROOT, SIZES, Timer, lstm_flops, random_bilm, read_sentences
from .processes import run_python
from .record import publish


class PlainElmo(nn.Module):
    """The reference: char CNN on every token, then nn.LSTM(proj_size) forward/backward stacks."""

    def __init__(self, bilm):
        super().__init__()
        c = bilm.config
        self.token_encoder = bilm.token_encoder
        self.forward_lstms = nn.ModuleList(
            nn.LSTM(c.projection_dim, c.lstm_dim, proj_size=c.projection_dim, batch_first=True)
            for _ in range(c.n_layers)
        )
        self.backward_lstms = nn.ModuleList(
            nn.LSTM(c.projection_dim, c.lstm_dim, proj_size=c.projection_dim, batch_first=True)
            for _ in range(c.n_layers)
        )

    def forward(self, sentences: list[list[str]]) -> torch.Tensor:
        from spacy_contextual.models.bilm import reverse_padded
        from spacy_contextual.models.chars import add_sentence_boundaries, batch_to_ids

        ids, mask = add_sentence_boundaries(batch_to_ids(sentences))
        lengths = mask.sum(-1)
        tokens = ids.new_zeros(*mask.shape, self.token_encoder.output_dim, dtype=torch.float32)
        tokens[mask] = self._plain_token_vectors(ids[mask])
        layers = [torch.cat([tokens, tokens], -1)]
        fwd, bwd = tokens, reverse_padded(tokens, lengths)
        for index, (f_lstm, b_lstm) in enumerate(zip(self.forward_lstms, self.backward_lstms, strict=True)):
            f_out = self._run(f_lstm, fwd, lengths)
            b_out = self._run(b_lstm, bwd, lengths)
            if index > 0:
                f_out, b_out = f_out + fwd, b_out + bwd
            layers.append(torch.cat([f_out, reverse_padded(b_out, lengths)], -1))
            fwd, bwd = f_out, b_out
        return torch.stack(layers, 1)

    def _plain_token_vectors(self, ids: torch.Tensor) -> torch.Tensor:
        """The char CNN over all 50 positions of every token (no span trimming, no dedup)."""
        encoder = self.token_encoder
        y = encoder._max_pooled_features(ids, padding_at_the_end=False)  # the convolutions one by one
        for highway in encoder.highways:
            y = highway(y)
        return encoder.projection(y) if encoder.projection is not None else y

    @staticmethod
    def _run(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = lstm(packed)
        return pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]


def count_cnn_flops(token_encoder: nn.Module) -> list[int]:
    """Forward hooks that add 2 * multiply-adds of every conv and linear layer run to the returned cell."""
    total = [0]

    def hook(module, inputs, output):
        per_output = module.in_channels * module.kernel_size[0] if isinstance(module, nn.Conv1d) else module.in_features
        total[0] += 2 * output.numel() * per_output

    for module in token_encoder.modules():
        if isinstance(module, (nn.Conv1d, nn.Linear)):
            module.register_forward_hook(hook)
    return total


def measure(size: str, path: str, lines: int, threads: int, precision: str = "fp32") -> dict:
    torch.set_num_threads(threads)
    sentences = read_sentences(lines)
    n_tokens = sum(len(s) for s in sentences)
    bilm = random_bilm(size)
    timer = Timer()
    cnn_flops = count_cnn_flops(bilm.token_encoder)
    with torch.no_grad():
        if path == "exact":  # made (weights cast to the precision) before the clock starts: that is loading
            from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder

            embedder = ElmoEmbedder(bilm, precision=precision)
            timer.time_method(embedder.bilm, "encode", "lstm")
            timer.time_method(embedder.token_cache, "token_vectors", "cnn")
        else:
            plain = PlainElmo(bilm).eval()
        cpu_start = time.process_time()
        start = time.perf_counter()
        if path == "exact":
            for _ in embedder.iter_embed(sentences):
                pass
        else:
            for i in range(0, len(sentences), 64):
                plain(sentences[i : i + 64])
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "size": size,
        "path": path,
        "tokens": n_tokens,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "tokens_per_s": n_tokens / seconds,
        "peak_rss_mb": peak_mb,
        "lstm_gflop": lstm_flops(bilm.config, n_tokens + 2 * len(sentences)) / 1e9,
        "cnn_gflop": cnn_flops[0] / 1e9,
    }
    if path == "exact":
        result.update(lstm_seconds=timer.seconds["lstm"], cnn_seconds=timer.seconds["cnn"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sizes", nargs="+", default=["small", "original"], choices=sorted(SIZES))
    parser.add_argument("--before", type=Path, help="a source tree to run the exact path from as 'exact (before)'")
    parser.add_argument("--rounds", type=int, default=1, help="run the paths alternately this often; keep the best")
    parser.add_argument("--skip-plain", action="store_true", help="leave out the nn.LSTM reference")
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    parser.add_argument(
        "--precisions", nargs="+", default=["fp32"], choices=["fp32", "bf16"], help="of the exact path (plain: fp32)"
    )
    parser.add_argument("--child", nargs=3, metavar=("SIZE", "PATH", "PRECISION"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], args.child[1], args.lines, args.threads, args.child[2])))
        return
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    paths = {}
    for precision in args.precisions:
        paths[f"exact {precision}"] = ("exact", precision, {**env, "PYTHONPATH": str(ROOT)})
        if args.before:
            paths[f"exact {precision} (before)"] = ("exact", precision, {**env, "PYTHONPATH": str(args.before)})
    if not args.skip_plain:
        paths["plain fp32"] = ("plain", "fp32", {**env, "PYTHONPATH": str(ROOT)})
    best: dict[tuple[str, str], dict] = {}
    loads = []
    for _ in range(args.rounds):
        loads.append(f"{os.getloadavg()[0]:.1f}")
        for size in args.sizes:
            for label, (path, precision, child_env) in paths.items():
                cmd = ["-m", __spec__.name, "--lines", str(args.lines), "--threads", str(args.threads)]
                cmd += ["--child", size, path, precision]
                stdout = run_python(cmd, check=True, capture_output=True, text=True, env=child_env).stdout
                result = json.loads(stdout.strip().splitlines()[-1])
                print(f"{size:9s} {label:15s} {json.dumps(result)}", flush=True)
                if (size, label) not in best or result["seconds"] < best[(size, label)]["seconds"]:
                    best[(size, label)] = result
    tokens = next(iter(best.values()))["tokens"]
    table = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: ELMo inference speed ({platform.processor() or platform.machine()}, "
        f"{args.threads} threads, torch {torch.__version__}, load average {' / '.join(loads)} before each round)\n",
        f"`python -m benchmarks.elmo_speed {' '.join(sys.argv[1:])}` on the first {args.lines} lines of lm_corpus "
        f"valid ({tokens} tokens), random weights; best of {args.rounds} alternating round(s).\n",
        "| size | path | tokens/s | seconds | CPU s | LSTM s | LSTM GFLOP/s | CNN s | CNN GFLOP/s | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (size, label), r in best.items():
        lstm = f"{r['lstm_seconds']:.1f} | {r['lstm_gflop'] / r['lstm_seconds']:.1f}" if "lstm_seconds" in r else "|"
        cnn = f"{r['cnn_seconds']:.1f} | {r['cnn_gflop'] / r['cnn_seconds']:.1f}" if "cnn_seconds" in r else "|"
        speed = f"{r['tokens_per_s']:.0f} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f}"
        table.append(f"| {size} | {label} | {speed} | {lstm} | {cnn} | {r['peak_rss_mb']:.0f} |")
    text = "\n".join(table) + "\n"
    publish(text, args.output)


if __name__ == "__main__":
    main()
