"""The EWT tagger with bf16 ELMo features at training and test time against fp32: test UPOS / XPOS.

``configs/elmo_tagger.cfg`` (frozen ELMo, segment cache) trained with the same data and steps, once
with ``components.elmo.model.precision`` "fp32" and once "bf16" for each of ``--seeds``, each
evaluated on the test split in the precision it was trained with; each fp32 model is also evaluated
with bf16 features (test time only: the saved pipeline loaded with the precision overridden). The
budget: bf16 within 0.1 UPOS of fp32; the fp32 runs of two seeds show how far training noise alone
moves the score.

The corpora are the first ``--train-docs`` / ``--dev-docs`` / ``--test-docs`` docs (10 sentences
each) of UD English EWT converted as ``project.yml``'s ``convert-ewt`` does (0 = all): on a CPU
without native bf16 the bf16 biLM runs ~10x slower than fp32, so a run on the whole treebank takes
hours there.

    python -m benchmarks.ewt_precision --train-docs 300 --dev-docs 50 --test-docs 0 --max-steps 1500 \\
        --seeds 0 1 [--workdir ewt_precision] [--output benchmarks/history/precision.md]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .record import publish

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EWT = REPO.parent / "shared" / "data" / "ud_english_ewt"
CONFIG = REPO / "configs" / "elmo_tagger.cfg"
SPLITS = ("train", "dev", "test")


def prepare_corpus(workdir: Path, docs: dict[str, int]) -> dict[str, Path]:
    """EWT converted with ``spacy convert -n 10``, each split cut to its first ``docs[split]`` docs."""
    import spacy
    from spacy.tokens import DocBin

    conllu = workdir / "conllu"
    conllu.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        with gzip.open(EWT / f"{split}.conllu.gz", "rb") as source, (conllu / f"{split}.conllu").open("wb") as out:
            shutil.copyfileobj(source, out)
    full = workdir / "full"
    full.mkdir(exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "spacy", "convert", str(conllu), str(full), "--converter", "conllu", "-n", "10"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    vocab = spacy.blank("en").vocab
    paths = {}
    for split in SPLITS:
        all_docs = list(DocBin().from_disk(full / f"{split}.spacy").get_docs(vocab))
        kept = all_docs[: docs[split]] if docs[split] else all_docs
        paths[split] = workdir / f"{split}.spacy"
        DocBin(docs=kept, store_user_data=True).to_disk(paths[split])
        print(f"{split}: {len(kept)} docs, {sum(len(d) for d in kept):,} tokens", flush=True)
    return paths


def train(workdir: Path, corpus: dict[str, Path], precision: str, max_steps: int, seed: int) -> tuple[Path, float]:
    output = workdir / f"tagger_{precision}_seed{seed}"
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable, "-m", "spacy", "train", str(CONFIG), "--output", str(output),
            "--paths.train", str(corpus["train"]), "--paths.dev", str(corpus["dev"]),
            "--components.elmo.model.precision", precision, "--training.max_steps", str(max_steps),
            "--training.seed", str(seed),
        ],
        check=True,
    )  # fmt: skip
    return output / "model-best", time.perf_counter() - start


EVALUATE = """
import json, sys
import spacy
from spacy.tokens import DocBin
from spacy.training import Example

model, test, precision = sys.argv[1:]
nlp = spacy.load(model, config={"components": {"elmo": {"model": {"precision": precision}}}})
docs = list(DocBin().from_disk(test).get_docs(nlp.vocab))
examples = [Example(nlp.make_doc(doc.text), doc) for doc in docs]
scores = nlp.evaluate(examples)
print(json.dumps({"pos_acc": scores["pos_acc"], "tag_acc": scores["tag_acc"]}))
"""


def evaluate(model: Path, test: Path, precision: str) -> dict[str, float]:
    """``nlp.evaluate`` on the test split with the ELMo features in ``precision`` (a fresh process)."""
    run = subprocess.run(
        [sys.executable, "-c", EVALUATE, str(model), str(test), precision], check=True, capture_output=True, text=True
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train-docs", type=int, default=300)
    parser.add_argument("--dev-docs", type=int, default=50)
    parser.add_argument("--test-docs", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=1500)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--workdir", type=Path, default=Path("ewt_precision"))
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    args = parser.parse_args()
    docs = {"train": args.train_docs, "dev": args.dev_docs, "test": args.test_docs}
    corpus = prepare_corpus(args.workdir, docs)
    runs = {}
    for seed in args.seeds:
        for precision in ("fp32", "bf16"):
            model, seconds = train(args.workdir, corpus, precision, args.max_steps, seed)
            runs[(seed, precision, precision)] = (evaluate(model, corpus["test"], precision), seconds)
            if precision == "fp32":
                runs[(seed, "fp32", "bf16")] = (evaluate(model, corpus["test"], "bf16"), None)
    exact = runs[(args.seeds[0], "fp32", "fp32")][0]
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: the EWT tagger with bf16 ELMo features against fp32 (bundled ELMo)\n",
        f"`python -m benchmarks.ewt_precision {' '.join(sys.argv[1:])}`: `configs/elmo_tagger.cfg` (frozen ELMo), the "
        f"first {args.train_docs} / {args.dev_docs} / {args.test_docs} docs of EWT train / dev / test (10 sentences "
        f"each; 0 = all), {args.max_steps} steps; test scores of model-best with `nlp.evaluate`, UPOS against "
        f"fp32 of seed {args.seeds[0]}.\n",
        "| seed | trained with | tested with | test UPOS | test XPOS | UPOS vs fp32 | training wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for (seed, trained, tested), (scores, seconds) in runs.items():
        lines.append(
            f"| {seed} | {trained} | {tested} | {100 * scores['pos_acc']:.2f} | {100 * scores['tag_acc']:.2f} | "
            f"{100 * (scores['pos_acc'] - exact['pos_acc']):+.2f} | {'' if seconds is None else f'{seconds:.0f}'} |"
        )
    publish("\n".join(lines) + "\n", args.output)


if __name__ == "__main__":
    main()
