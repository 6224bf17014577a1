"""Training throughput on this CPU: the bundled ELMo biLM (char CNN + projected LSTMs + adaptive
softmax, our trainer's step) next to a plain ``torch.nn.LSTM`` language model of the same size
(word embeddings, forward and backward 2-layer LSTMs with projection, full softmax), measured in the
same run on the same batches, interleaved so that load changes hit both alike. Also the softmax
alone per 1,000 predictions: adaptive vs sampled (8,192 shared negatives) vs full.

``--precisions fp32 bf16`` also times our biLM's step under bf16 autocast, as ``training.mixed_precision``
runs it (the softmax and loss in float32); ``--size original`` replaces the config's model by bilm-tf's
original 2x4096_512 (``common.SIZES``); ``--skip-plain`` leaves out the plain LM.

    python -m benchmarks.train_speed --config configs/pretrain_elmo_default.json --batches 8
    python -m benchmarks.train_speed --precisions fp32 bf16 --size original --skip-plain --batches 2 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import nullcontext
from pathlib import Path

import torch
from torch import nn

from spacy_contextual.models.bilm import BiLM, BiLMConfig
from spacy_contextual.training.batch_stream import BatchStream
from spacy_contextual.training.config import PretrainConfig
from spacy_contextual.training.lm import BidirectionalLM
from spacy_contextual.training.vocab import LMVocabulary


class PlainLSTMLM(nn.Module):
    """Word embedding -> forward / backward ``nn.LSTM(proj_size=P)`` stacks -> one full softmax."""

    def __init__(self, vocab: LMVocabulary, lstm_dim: int, projection_dim: int, n_layers: int):
        super().__init__()
        self.vocab = vocab
        self.embedding = nn.Embedding(len(vocab), projection_dim)
        self.forward_lstm = nn.LSTM(projection_dim, lstm_dim, n_layers, batch_first=True, proj_size=projection_dim)
        self.backward_lstm = nn.LSTM(projection_dim, lstm_dim, n_layers, batch_first=True, proj_size=projection_dim)
        self.softmax = nn.Linear(projection_dim, len(vocab))

    def forward(self, sentences) -> torch.Tensor:
        ids = torch.zeros(len(sentences), max(map(len, sentences)) + 2, dtype=torch.long)
        mask = torch.zeros(ids.shape, dtype=torch.bool)
        for row, sentence in enumerate(sentences):
            encoded = self.vocab.encode(sentence)
            ids[row, : len(encoded)] = torch.tensor(encoded)
            mask[row, : len(encoded)] = True
        x = self.embedding(ids)
        forward, _ = self.forward_lstm(x)
        backward, _ = self.backward_lstm(x.flip(1))  # padding first after the flip: same cost, timing only
        backward = backward.flip(1)
        predicting = mask[:, 1:]
        loss = nn.functional.cross_entropy(
            self.softmax(forward[:, :-1][predicting]), ids[:, 1:][predicting], reduction="sum"
        )
        loss = loss + nn.functional.cross_entropy(
            self.softmax(backward[:, 1:][predicting]), ids[:, :-1][predicting], reduction="sum"
        )
        return loss / predicting.sum()


def time_training(model: nn.Module, loss_of, batches, precision: str = "fp32") -> float:
    """Seconds for forward + backward + Adam step over ``batches`` (the forward under bf16 autocast for "bf16")."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    for sentences in batches:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else nullcontext():
            loss = loss_of(model(sentences))
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def time_softmax(input_dim: int, vocab_size: int, targets: torch.Tensor, repeats: int = 3) -> dict[str, float]:
    """Milliseconds per 1,000 predictions (forward + backward) for each softmax."""
    hidden = torch.randn(len(targets), input_dim, requires_grad=True)
    adaptive = nn.AdaptiveLogSoftmaxWithLoss(input_dim, vocab_size, [2000, 10000], div_value=4.0)
    full = nn.Linear(input_dim, vocab_size)
    negatives = torch.randint(0, vocab_size, (8192,))

    def sampled():
        # bilm-tf: true-class logit + logits of 8,192 shared sampled classes, softmax over them
        true_logit = (hidden * full.weight[targets]).sum(-1, keepdim=True) + full.bias[targets, None]
        noise = hidden @ full.weight[negatives].t() + full.bias[negatives]
        return -torch.log_softmax(torch.cat([true_logit, noise], -1), -1)[:, 0].mean()

    runs = {
        "adaptive [2000, 10000]": lambda: adaptive(hidden, targets).loss,
        "sampled, 8192 negatives": sampled,
        "full": lambda: nn.functional.cross_entropy(full(hidden), targets),
    }
    out = {}
    for name, run in runs.items():
        run().backward()
        start = time.perf_counter()
        for _ in range(repeats):
            run().backward()
        out[name] = (time.perf_counter() - start) / repeats / len(targets) * 1000 * 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/pretrain_elmo_default.json")
    parser.add_argument("--vocab", default=None, help="vocab.txt (default: built from the config's training data)")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds per model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precisions", nargs="+", default=["fp32"], choices=["fp32", "bf16"])
    parser.add_argument("--size", default="config", choices=["config", "original"])
    parser.add_argument("--skip-plain", action="store_true")
    parser.add_argument("--output", default=None, help="write the results as JSON")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = PretrainConfig.load(args.config)
    if args.size == "original":
        from .common import SIZES

        config.model = BiLMConfig(**SIZES["original"])
    if args.vocab:
        vocab = LMVocabulary.load(args.vocab)
    else:
        vocab = LMVocabulary.build(config.data.train, config.data.min_count)
    stream = BatchStream(config.data.train, config.data.batch_tokens, config.data.chunk_sentences, seed=0)
    batches = [batch for (_, batch), _ in zip(stream(), range(args.batches + 1), strict=False)]
    warmup, batches = batches[:1], batches[1:]
    tokens = sum(len(s) for batch in batches for s in batch)

    torch.manual_seed(0)
    m = config.model
    ours = BidirectionalLM(BiLM(m), vocab, config.softmax, dropout=0.1).train()
    models = {
        f"ELMo biLM (ours), adaptive softmax, {precision}": (ours, lambda loss: loss.mean, precision)
        for precision in args.precisions
    }
    if not args.skip_plain:
        plain = PlainLSTMLM(vocab, m.lstm_dim, m.projection_dim, m.n_layers).train()
        models["plain nn.LSTM LM, full softmax"] = (plain, lambda loss: loss, "fp32")
    seconds = {name: 0.0 for name in models}
    for model, loss_of, precision in models.values():
        time_training(model, loss_of, warmup, precision)
    for _ in range(args.rounds):
        for name, (model, loss_of, precision) in models.items():
            elapsed = time_training(model, loss_of, batches, precision)
            seconds[name] += elapsed
            print(f"{name}: {tokens / elapsed:,.0f} tokens/s this round", flush=True)
    results = {
        "threads": args.threads,
        "tokens_per_round": tokens,
        "model": m.to_dict(),
        "vocab_size": len(vocab),
        "train_tokens_per_second": {name: tokens * args.rounds / s for name, s in seconds.items()},
        "parameters_millions": {
            name: sum(p.numel() for p in model.parameters()) / 1e6 for name, (model, _, _) in models.items()
        },
    }
    targets = torch.tensor([vocab[w] for batch in batches[:2] for s in batch for w in s][:2000])
    results["softmax_ms_per_1000_predictions"] = time_softmax(m.projection_dim, len(vocab), targets)
    print(json.dumps(results, indent=2))
    if args.output:
        Path(args.output).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
