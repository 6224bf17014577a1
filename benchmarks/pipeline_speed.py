"""spaCy pipeline speed in words/s, with and without the ``elmo`` component, same run.

Data: the first N lines of ../shared/data/lm_corpus/valid.txt.gz, one Doc per line. Weights: an
ELMo model directory (``--model``, default the bundled one) or ``--random-like CONFIG.json`` (a
random biLM with that training config's architecture: speed does not depend on the weights).

Rows: the tokenizer alone (``spacy.blank("en")``); the ``elmo`` component (all layers stored on the
Doc); and, as the reference for the component's overhead, ``ElmoEmbedder.embed_sentences`` on the
same token lists. ``--n-process 1 2`` adds ``nlp.pipe(texts, n_process=N)`` rows for the ``elmo``
and ``cove`` components (bundled CoVe): N worker processes with ``threads // N`` torch threads each
(``spacy_contextual/threads.py``), the docs coming back to the parent included.

    python -m benchmarks.pipeline_speed --random-like configs/pretrain_elmo_default.json --lines 2000 --threads 1
    python -m benchmarks.pipeline_speed --lines 2000 --threads 2 --n-process 1 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path

import spacy
import torch

from .common import VALID, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="ELMo model directory (default: the bundled one)")
    parser.add_argument(
        "--random-like", type=Path, default=None, help="training config JSON: random weights of its size"
    )
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n-process", type=int, nargs="*", default=[], help="also time nlp.pipe(n_process=N)")
    parser.add_argument("--batch-size", type=int, default=64, help="docs per nlp.pipe batch (what a worker gets)")
    parser.add_argument("--repeat", type=int, default=1, help="time each n_process row this often, keep the best")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
    from spacy_contextual.formats.bilm_dir import save_bilm
    from spacy_contextual.layers import elmo_model_dir_loader
    from spacy_contextual.models.bilm import BiLM, BiLMConfig

    model = args.model
    if args.random_like is not None:
        config = BiLMConfig(**json.loads(args.random_like.read_text())["model"])
        model = str(save_bilm(BiLM(config), Path(tempfile.mkdtemp()) / "random_elmo"))
    with gzip.open(VALID, "rt", encoding="utf-8") as lines:
        texts = [line.strip() for _, line in zip(range(args.lines), lines, strict=False)]

    blank = spacy.blank("en")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(model))
    docs = list(blank.pipe(texts))
    words = sum(len(doc) for doc in docs)

    rows = [("tokenizer only (spacy.blank)", elapsed(lambda: list(blank.pipe(texts))))]
    nlp("warm up")
    rows.append(("tokenizer + elmo component", elapsed(lambda: list(nlp.pipe(texts)))))
    embedder = ElmoEmbedder.load(model)
    token_lists = [[t.text for t in doc if not t.is_space] for doc in docs]
    rows.append(("ElmoEmbedder.embed_sentences (reference)", elapsed(lambda: embedder.embed_sentences(token_lists))))

    if args.n_process:
        cove = spacy.blank("en")
        cove.add_pipe("cove")
        cove.initialize()
        for kind, pipeline in (("elmo", nlp), ("cove", cove)):
            rows += process_rows(kind, pipeline, texts, args.n_process, args.threads, args.batch_size, args.repeat)

    size = f"{embedder.bilm.config.n_layers}x{embedder.bilm.config.lstm_dim}_{embedder.bilm.config.projection_dim}"
    print(f"{len(texts)} docs, {words} words, biLM {size}, torch threads {args.threads}, {sys.platform}")
    print("| pipeline | seconds | words/s |\n|---|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {words / seconds:,.0f} |")


def process_rows(kind, nlp, texts, counts, threads, batch_size, repeat) -> list[tuple[str, float]]:
    """``nlp.pipe(texts, n_process=N)`` timed for every N in ``counts`` (the best of ``repeat`` rounds,
    the counts alternating within a round), after a warm-up in the parent."""
    list(nlp.pipe(texts[:50]))  # also starts the parent's OpenMP threads, as a user's earlier call would
    best = dict.fromkeys(counts, float("inf"))
    for _ in range(repeat):
        for n in counts:
            seconds = elapsed(lambda n=n: list(nlp.pipe(texts, n_process=n, batch_size=batch_size)))
            best[n] = min(best[n], seconds)
    rows = []
    for n in counts:
        share = max(1, threads // n)
        rows.append((f"{kind} component, n_process={n} ({share} thread{'s' if share > 1 else ''} each)", best[n]))
    return rows


if __name__ == "__main__":
    main()
