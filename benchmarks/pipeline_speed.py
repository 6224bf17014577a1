"""spaCy pipeline speed in words/s, with and without the ``elmo`` component, same run.

Data: the first N lines of ../shared/data/lm_corpus/valid.txt.gz, one Doc per line. Weights: an
ELMo model directory (``--model``, default the bundled one) or ``--random-like CONFIG.json`` (a
random biLM with that training config's architecture: speed does not depend on the weights).

Rows: the tokenizer alone (``spacy.blank("en")``); the ``elmo`` component (all layers stored on the
Doc); and, as the reference for the component's overhead, ``ElmoEmbedder.embed_sentences`` on the
same token lists.

    python benchmarks/pipeline_speed.py --random-like configs/pretrain_elmo_default.json --lines 2000 --threads 1
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

import spacy
import torch

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "lm_corpus" / "valid.txt.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="ELMo model directory (default: the bundled one)")
    parser.add_argument(
        "--random-like", type=Path, default=None, help="training config JSON: random weights of its size"
    )
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from spacy_contextual.embedders.elmo import ElmoEmbedder
    from spacy_contextual.formats.bilm_dir import save_bilm
    from spacy_contextual.models.bilm import BiLM, BiLMConfig
    from spacy_contextual.pipeline import elmo_model_dir_loader

    model = args.model
    if args.random_like is not None:
        config = BiLMConfig(**json.loads(args.random_like.read_text())["model"])
        model = str(save_bilm(BiLM(config), Path(tempfile.mkdtemp()) / "random_elmo"))
    with gzip.open(DATA, "rt", encoding="utf-8") as lines:
        texts = [line.strip() for _, line in zip(range(args.lines), lines, strict=False)]

    blank = spacy.blank("en")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(model))
    docs = list(blank.pipe(texts))
    words = sum(len(doc) for doc in docs)

    rows = [("tokenizer only (spacy.blank)", timed(lambda: list(blank.pipe(texts))))]
    nlp("warm up")
    rows.append(("tokenizer + elmo component", timed(lambda: list(nlp.pipe(texts)))))
    embedder = ElmoEmbedder.load(model)
    token_lists = [[t.text for t in doc if not t.is_space] for doc in docs]
    rows.append(("ElmoEmbedder.embed_sentences (reference)", timed(lambda: embedder.embed_sentences(token_lists))))

    size = f"{embedder.bilm.config.n_layers}x{embedder.bilm.config.lstm_dim}_{embedder.bilm.config.projection_dim}"
    print(f"{len(texts)} docs, {words} words, biLM {size}, torch threads {args.threads}, {sys.platform}")
    print("| pipeline | seconds | words/s |\n|---|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {words / seconds:,.0f} |")


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
