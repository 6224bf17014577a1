"""The EWT tagger with bf16 ELMo features at training and test time against fp32: test UPOS / XPOS.

``configs/elmo_tagger.cfg`` (frozen ELMo, segment cache) trained twice with the same seed, data and
steps, once with ``components.elmo.model.precision`` "fp32" and once "bf16", each evaluated with
``spacy evaluate`` on the test split in the precision it was trained with; the fp32 model is also
evaluated with bf16 features (test time only: the saved pipeline loaded with the precision
overridden). The issue's budget: bf16 within 0.1 UPOS of fp32.

The corpora are the first ``--train-docs`` / ``--dev-docs`` / ``--test-docs`` docs (10 sentences
each) of UD English EWT converted as ``project.yml``'s ``convert-ewt`` does (0 = all): on a CPU
without native bf16 the bf16 biLM runs ~10x slower than fp32, so a run on the whole treebank takes
hours there.

    python benchmarks/ewt_precision.py --train-docs 150 --dev-docs 30 --test-docs 100 --max-steps 600 \\
        [--workdir ewt_precision] [--output benchmarks/history/precision.md]
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

from record import publish

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


def train(workdir: Path, corpus: dict[str, Path], precision: str, max_steps: int) -> tuple[Path, float]:
    output = workdir / f"tagger_{precision}"
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable, "-m", "spacy", "train", str(CONFIG), "--output", str(output),
            "--paths.train", str(corpus["train"]), "--paths.dev", str(corpus["dev"]),
            "--components.elmo.model.precision", precision, "--training.max_steps", str(max_steps),
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
    parser.add_argument("--train-docs", type=int, default=150)
    parser.add_argument("--dev-docs", type=int, default=30)
    parser.add_argument("--test-docs", type=int, default=100)
    parser.add_argument("--max-steps", type=int, default=600)
    parser.add_argument("--workdir", type=Path, default=Path("ewt_precision"))
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    args = parser.parse_args()
    docs = {"train": args.train_docs, "dev": args.dev_docs, "test": args.test_docs}
    corpus = prepare_corpus(args.workdir, docs)
    runs = {}
    for precision in ("fp32", "bf16"):
        model, seconds = train(args.workdir, corpus, precision, args.max_steps)
        runs[(precision, precision)] = (evaluate(model, corpus["test"], precision), seconds)
    runs[("fp32", "bf16")] = (evaluate(args.workdir / "tagger_fp32" / "model-best", corpus["test"], "bf16"), None)
    exact = runs[("fp32", "fp32")][0]
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M')}: the EWT tagger with bf16 ELMo features against fp32 (bundled ELMo)\n",
        f"`python benchmarks/ewt_precision.py {' '.join(sys.argv[1:])}`: `configs/elmo_tagger.cfg` (frozen ELMo), the "
        f"first {args.train_docs} / {args.dev_docs} / {args.test_docs} docs of EWT train / dev / test (10 sentences "
        f"each), {args.max_steps} steps, the same seed; test scores of model-best with `nlp.evaluate`.\n",
        "| trained with | tested with | test UPOS | test XPOS | UPOS vs fp32 | training wall s |",
        "|---|---|---|---|---|---|",
    ]
    for (trained, tested), (scores, seconds) in runs.items():
        lines.append(
            f"| {trained} | {tested} | {100 * scores['pos_acc']:.2f} | {100 * scores['tag_acc']:.2f} | "
            f"{100 * (scores['pos_acc'] - exact['pos_acc']):+.2f} | {'' if seconds is None else f'{seconds:.0f}'} |"
        )
    publish("\n".join(lines) + "\n", args.output)


if __name__ == "__main__":
    main()
