"""Sense-explorer speed at 5,000 occurrences: the time of each interaction, as the page runs it.

Corpus: the first N occurrences of WORD (default "like") in ../shared/data/lm_corpus/{train,valid,
test}.txt.gz, written as an (unlabelled) JSONL and opened on the page as a JSONL corpus. Model: an
ELMo model directory (default: the bundled one); ``--random-like CONFIG.json`` builds a random
biLM with that training config's architecture instead (timing does not depend on the weights).

Two views:

* **page**: ``streamlit.testing.v1.AppTest`` runs the real page (1_Sense_explorer.py) and times each
  rerun a user triggers: the first load (read, embed: once per corpus and model, then cached), the
  Project button (PCA, then UMAP), clicking another occurrence (nearest neighbours), changing k,
  changing the layer and projecting again, colour. Browser rendering is not included.
* **steps**: the analysis functions alone, on the same vectors, afterwards in the same process.

    [OMP_NUM_THREADS=1] python benchmarks/app_speed.py [--model DIR | --random-like CONFIG.json] \
        [--occurrences 5000] [--output benchmarks/history/dashboard.md]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # before numpy and torch load
    os.environ.setdefault(
        _variable, "1"
    )  # one thread each, as on the shared 2-CPU machine; override in the environment

import torch  # noqa: E402
from record import record_entry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LM_CORPUS = ROOT.parent / "shared" / "data" / "lm_corpus"
PAGE = ROOT / "app" / "pages" / "1_Sense_explorer.py"


def write_corpus(word: str, occurrences: int, path: Path) -> int:
    """One JSONL record per occurrence (the lm corpus is whitespace-tokenised); returns the count."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for split in ("train", "valid", "test"):
            with gzip.open(LM_CORPUS / f"{split}.txt.gz", "rt", encoding="utf-8") as lines:
                for line in lines:
                    tokens = line.split()
                    for position, token in enumerate(tokens):
                        if token.lower() == word and count < occurrences:
                            out.write(json.dumps({"tokens": tokens, "target": position, "word": word}) + "\n")
                            count += 1
                    if count >= occurrences:
                        return count
    return count


def random_model(config_path: Path, out: Path) -> Path:
    from spacy_contextual.formats.bilm_dir import save_bilm
    from spacy_contextual.models.bilm import BiLM, BiLMConfig

    config = json.loads(config_path.read_text())
    torch.manual_seed(0)
    return save_bilm(BiLM(BiLMConfig(**config.get("model", config.get("bilm", config)))).eval(), out)


def timed(label: str, action, results: list) -> object:
    start = time.perf_counter()
    value = action()
    seconds = time.perf_counter() - start
    results.append((label, seconds))
    print(f"{label:<62} {seconds:8.2f} s", flush=True)
    return value


def page_timings(corpus: Path, model: str) -> list:
    from streamlit.testing.v1 import AppTest

    os.environ["SPACY_CONTEXTUAL_ELMO_MODEL"] = model
    os.environ["SPACY_CONTEXTUAL_SENSE_DATA"] = str(corpus.parent)
    results: list = []
    at = AppTest.from_file(str(PAGE), default_timeout=3600)
    at.session_state["sense_source"] = "Sense-labelled JSONL"
    at.session_state["sense_jsonl_file"] = str(corpus)

    def run(step):
        step()
        at.run()
        if at.exception:
            raise RuntimeError(at.exception[0].value)
        errors = [e.value for e in at.error]
        if errors:
            raise RuntimeError(errors)

    timed("page: first load (read corpus, embed every sentence)", lambda: run(lambda: None), results)
    n = int(at.caption[0].value.split(" occurrences")[0].replace(",", ""))
    print(f"  ({n:,} occurrences on the page)")
    timed(
        "page: Project with PCA (+ KMeans, k by silhouette)",
        lambda: run(lambda: at.button(key="sense_run").click()),
        results,
    )
    timed(
        "page: click another occurrence (nearest neighbours)",
        lambda: run(lambda: at.selectbox(key="sense_query").set_value(123)),
        results,
    )
    timed(
        "page: more neighbours (slider)", lambda: run(lambda: at.slider(key="sense_neighbours").set_value(25)), results
    )
    timed("page: fixed k = 4 (KMeans)", lambda: run(lambda: at.checkbox(key="sense_auto_k").uncheck()), results)
    timed(
        "page: agglomerative clusters, k = 4",
        lambda: run(lambda: at.radio(key="sense_clusters").set_value("agglomerative")),
        results,
    )
    timed("page: agglomerative, k by silhouette", lambda: run(lambda: at.checkbox(key="sense_auto_k").check()), results)
    timed(
        "page: colour by cluster (no-op rerun)",
        lambda: run(lambda: at.radio(key="sense_color").set_value("cluster")),
        results,
    )
    timed(
        "page: layer 1 (new request: vectors, clusters)",
        lambda: run(lambda: at.selectbox(key="sense_layer").set_value(1)),
        results,
    )
    timed("page: Project with PCA on layer 1", lambda: run(lambda: at.button(key="sense_run").click()), results)
    timed("page: UMAP selected", lambda: run(lambda: at.radio(key="sense_projection").set_value("umap")), results)
    timed(
        "page: Project with UMAP (first in process: numba JIT)",
        lambda: run(lambda: at.button(key="sense_run").click()),
        results,
    )
    timed("page: layer 2 (new request)", lambda: run(lambda: at.selectbox(key="sense_layer").set_value(2)), results)
    timed(
        "page: Project with UMAP on layer 2 (numba compiled)",
        lambda: run(lambda: at.button(key="sense_run").click()),
        results,
    )
    timed(
        "page: click another occurrence after UMAP (cached)",
        lambda: run(lambda: at.selectbox(key="sense_query").set_value(7)),
        results,
    )
    return results


def step_timings(corpus: Path, model: str) -> list:
    from spacy_contextual.analysis.clusters import cluster
    from spacy_contextual.analysis.neighbours import neighbour_table
    from spacy_contextual.analysis.occurrences import find_occurrences, read_sense_jsonl
    from spacy_contextual.analysis.projection import project
    from spacy_contextual.analysis.projector_export import projector_zip
    from spacy_contextual.analysis.sense_plots import point_frame, sense_scatter
    from spacy_contextual.analysis.vectors import occurrence_layers, select_layer
    from spacy_contextual.embedders.elmo import ElmoEmbedder

    results: list = []
    records = timed("steps: read JSONL", lambda: read_sense_jsonl(corpus), results)
    word = records[0]["word"]
    occurrences = timed("steps: find occurrences", lambda: find_occurrences(records, word), results)
    embedder = ElmoEmbedder.load(model)
    layers = timed(
        f"steps: embed {len(set(occurrences['record'])):,} sentences (all layers)",
        lambda: occurrence_layers(embedder.embed_sentences, records, occurrences),
        results,
    )
    vectors = select_layer(layers, 2)
    clusters = timed("steps: KMeans, k by silhouette (2..8)", lambda: cluster(vectors, "kmeans"), results)
    timed("steps: KMeans, k = 4", lambda: cluster(vectors, "kmeans", 4), results)
    timed("steps: agglomerative (Ward), k by silhouette", lambda: cluster(vectors, "agglomerative"), results)
    coords = timed("steps: PCA", lambda: project(vectors, "pca"), results)
    timed("steps: UMAP", lambda: project(vectors, "umap"), results)
    frame = timed("steps: point frame", lambda: point_frame(records, occurrences, coords, clusters.labels), results)
    timed("steps: scatter figure + JSON", lambda: sense_scatter(frame, "cluster").to_json(), results)
    timed("steps: 10 nearest neighbours", lambda: neighbour_table(records, occurrences, vectors, 0, 10), results)
    metadata = occurrences.assign(cluster=clusters.labels)[["token", "sense", "cluster", "sentence"]]
    timed("steps: projector export (zip)", lambda: projector_zip(vectors, metadata), results)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="default", help="ELMo model directory, or 'default' (bundled)")
    parser.add_argument(
        "--random-like", type=Path, help="training config.json: time a random biLM of that architecture"
    )
    parser.add_argument("--word", default="like")
    parser.add_argument("--occurrences", type=int, default=5000)
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    args = parser.parse_args()
    threads = int(os.environ["OMP_NUM_THREADS"])
    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory() as tmp:
        model = str(random_model(args.random_like, Path(tmp) / "elmo")) if args.random_like else args.model
        corpus = Path(tmp) / "corpus" / f"{args.word}.jsonl"
        corpus.parent.mkdir()
        found = write_corpus(args.word, args.occurrences, corpus)
        print(
            f"{found:,} occurrences of '{args.word}'; model {args.random_like or model}; {threads} thread(s) "
            f"(OMP_NUM_THREADS); {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
        )
        page = page_timings(corpus, model)  # first, as a fresh server meets it (numba not yet compiled)
        steps = step_timings(corpus, model)
    if args.output:
        heading = (
            f"## {time.strftime('%Y-%m-%d')}: Sense explorer, {found:,} occurrences of '{args.word}' "
            f"({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {threads} thread(s))"
        )
        command = f"`python benchmarks/app_speed.py {' '.join(sys.argv[1:])}`, model {args.random_like or model}"
        table = ["| interaction | seconds |", "|---|---|"]
        table += [f"| {label} | {seconds:.2f} |" for label, seconds in [*page, *steps]]
        record_entry(args.output, "\n".join([heading, "", command, "", *table]))


if __name__ == "__main__":
    sys.exit(main())
