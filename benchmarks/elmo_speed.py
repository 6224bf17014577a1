"""ELMo inference speed: the CLI path (ElmoEmbedder) against a plain PyTorch reference, same run.

Data: the first N lines of ../shared/data/lm_corpus/valid.txt.gz (real sentences, 1-196 tokens).
Weights: random, at the small (2x1024_128, 2048-filter CNN, 1 highway) and original
(2x4096_512, 2 highway) sizes.

* exact path: ``ElmoEmbedder.iter_embed(batch_size=64)``: length-sorted batches under a token
  budget, char CNN once per distinct word (LRU cache), clipped projected LSTMs that skip padding.
* plain reference: batches of 64 in file order; the char CNN for every token; ``torch.nn.LSTM(proj_size=P)``
  stacks with ELMo's topology (separate forward and backward stacks, residual on layer 2), packed
  sequences, no clipping, no caching.

Each measurement runs in its own process so that its peak RSS is its own.

    python benchmarks/elmo_speed.py --lines 2000 --threads 2 [--sizes small original] \
        [--output benchmarks/history/elmo_inference.md]
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch
from record import record_entry
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

ROOT = Path(__file__).resolve().parents[1]
VALID = ROOT.parent / "shared" / "data" / "lm_corpus" / "valid.txt.gz"
SIZES = {
    "small": dict(lstm_dim=1024, projection_dim=128, n_highway=1),
    "original": dict(lstm_dim=4096, projection_dim=512, n_highway=2),
}


def read_sentences(lines: int) -> list[list[str]]:
    with gzip.open(VALID, "rt", encoding="utf-8") as handle:
        return [line.split() for _, line in zip(range(lines), handle, strict=False)]


def random_bilm(size: str):
    from spacy_contextual.models.bilm import BiLM, BiLMConfig

    torch.manual_seed(0)
    bilm = BiLM(BiLMConfig(**SIZES[size]))
    with torch.no_grad():
        for p in bilm.parameters():
            p.mul_(0.5)
    return bilm.eval()


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
        y = encoder._max_pooled_features(ids)
        for highway in encoder.highways:
            y = highway(y)
        return encoder.projection(y) if encoder.projection is not None else y

    @staticmethod
    def _run(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = lstm(packed)
        return pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]


def measure(size: str, path: str, lines: int, threads: int) -> dict:
    torch.set_num_threads(threads)
    sentences = read_sentences(lines)
    n_tokens = sum(len(s) for s in sentences)
    bilm = random_bilm(size)
    start = time.perf_counter()
    with torch.no_grad():
        if path == "exact":
            from spacy_contextual.embedders.elmo import ElmoEmbedder

            for _ in ElmoEmbedder(bilm).iter_embed(sentences, batch_size=64):
                pass
        else:
            plain = PlainElmo(bilm).eval()
            for i in range(0, len(sentences), 64):
                plain(sentences[i : i + 64])
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "size": size,
        "path": path,
        "tokens": n_tokens,
        "seconds": seconds,
        "tokens_per_s": n_tokens / seconds,
        "peak_rss_mb": peak_mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sizes", nargs="+", default=["small", "original"], choices=sorted(SIZES))
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    parser.add_argument("--child", nargs=2, metavar=("SIZE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], args.child[1], args.lines, args.threads)))
        return
    rows = []
    for size in args.sizes:
        for path in ("exact", "plain"):
            cmd = [
                sys.executable,
                __file__,
                "--lines",
                str(args.lines),
                "--threads",
                str(args.threads),
                "--child",
                size,
                path,
            ]
            result = json.loads(
                subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
            )
            rows.append(result)
            print(
                f"{size:9s} {path:6s} {result['tokens_per_s']:9.0f} tokens/s  peak RSS {result['peak_rss_mb']:7.0f} MB",
                flush=True,
            )
    table = [
        f"## {time.strftime('%Y-%m-%d')}: ELMo inference speed ({platform.processor() or platform.machine()}, "
        f"{args.threads} threads, torch {torch.__version__})\n",
        f"`python benchmarks/elmo_speed.py --lines {args.lines} --threads {args.threads} --sizes "
        f"{' '.join(args.sizes)}` "
        f"on the first {args.lines} lines of lm_corpus valid ({rows[0]['tokens']} tokens), random weights.\n",
        "| size | exact path tokens/s | plain reference tokens/s | ratio | exact peak RSS (MB) | plain peak RSS (MB) |",
        "|---|---|---|---|---|---|",
    ]
    for size in args.sizes:
        exact = next(r for r in rows if r["size"] == size and r["path"] == "exact")
        plain = next(r for r in rows if r["size"] == size and r["path"] == "plain")
        table.append(
            f"| {size} | {exact['tokens_per_s']:.0f} | {plain['tokens_per_s']:.0f} | "
            f"{exact['tokens_per_s'] / plain['tokens_per_s']:.2f}x | {exact['peak_rss_mb']:.0f} | "
            f"{plain['peak_rss_mb']:.0f} |"
        )
    text = "\n".join(table) + "\n"
    print(text)
    if args.output:
        record_entry(args.output, text)


if __name__ == "__main__":
    main()
