"""Training speed of a shipped config with and without the segment cache (``model.segment_cache_mb``).

Trains the same pipeline (``configs/elmo_tagger.cfg`` by default, frozen ELMo) for a few epochs on
the first ``--docs`` docs of a training file, once with the cache off and once on, in one process,
and prints the words/s of every epoch and the summed loss: with the cache the first epoch encodes
every sentence and later ones encode none, and the losses agree (the cached rows are the exact
float32 outputs).

    mkdir -p /tmp/ewt && gunzip -c ../shared/data/ud_english_ewt/train.conllu.gz > /tmp/ewt/train.conllu
    python -m spacy convert /tmp/ewt/train.conllu /tmp/ewt --converter conllu -n 10
    python -m benchmarks.segment_cache_speed /tmp/ewt/train.spacy [--config configs/elmo_tagger.cfg]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import spacy
import torch
from spacy.training import Corpus
from spacy.util import minibatch
from thinc.api import fix_random_seed

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def train_epochs(config_path: Path, train_path: Path, docs: int, epochs: int, cache_mb: int, model: str | None):
    overrides = {
        "paths.train": str(train_path),
        "paths.dev": str(train_path),
        "components.elmo.model.segment_cache_mb": cache_mb,
    }
    if model:
        overrides["paths.elmo_model"] = model
    config = spacy.util.load_config(config_path, overrides=overrides, interpolate=False)
    fix_random_seed(0)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    examples = list(Corpus(str(train_path), limit=docs)(nlp))
    optimizer = nlp.initialize(lambda: examples)
    words = sum(len(eg.reference) for eg in examples)
    rows = []
    for epoch in range(1, epochs + 1):
        losses: dict[str, float] = {}
        start = time.perf_counter()
        for batch in minibatch(examples, size=16):
            nlp.update(batch, sgd=optimizer, losses=losses)
        seconds = time.perf_counter() - start
        rows.append((epoch, words / seconds, sum(losses.values())))
    return words, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("train", type=Path, help="a .spacy training file (e.g. EWT train from spacy convert)")
    parser.add_argument("--config", type=Path, default=CONFIGS / "elmo_tagger.cfg")
    parser.add_argument("--model", default=None, help="ELMo model directory (default: the bundled one)")
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--cache-mb", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{args.config.name}, first {args.docs} docs of {args.train}, {args.threads} thread(s)\n")
    print("| segment_cache_mb | epoch | words/s | summed loss |\n|---|---|---|---|")
    for cache_mb in (0, args.cache_mb):
        words, rows = train_epochs(args.config, args.train, args.docs, args.epochs, cache_mb, args.model)
        for epoch, speed, loss in rows:
            print(f"| {cache_mb} | {epoch} | {speed:,.0f} | {loss:.4f} |", flush=True)
    print(f"\n{words:,} words per epoch")


if __name__ == "__main__":
    main()
