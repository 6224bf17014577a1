"""Dashboard speed: how long each page takes to be ready, and each interaction, as the page runs it
(``streamlit.testing.v1.AppTest``; browser rendering not included).

Two corpora:

* ``--corpus demo`` (default): the bundled demo sentences on every page, with the bundled ELMo and
  CoVe. What a server process pays once is timed apart first: loading the models, importing the
  analysis libraries (sklearn alone takes seconds to import on a busy 2-CPU machine), Streamlit's
  first script run. Every page is then timed on its first run with empty data caches (what a new
  user meets when they open it), then each interaction. Target: every page ready within 3 s.
* ``--corpus large``: the Sense explorer on the first N occurrences of WORD (default "like", 5,000) in
  ../shared/data/lm_corpus/{train,valid,test}.txt.gz, written as an unlabelled JSONL.

    [OMP_NUM_THREADS=1] python -m benchmarks.app_speed [--corpus demo|large] [--elmo-model DIR]
        [--cove-model DIR] [--occurrences 5000] [--output benchmarks/history/dashboard.md]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # before numpy and torch load
    os.environ.setdefault(_variable, "1")  # one thread each, as on the shared 2-CPU machine

import torch  # noqa: E402

from .record import record_entry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LM_CORPUS = ROOT.parent / "shared" / "data" / "lm_corpus"
APP = ROOT / "app"


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


class Timer:
    def __init__(self):
        self.rows: list[tuple[str, float]] = []

    def __call__(self, label: str, action):
        start = time.perf_counter()
        value = action()
        seconds = time.perf_counter() - start
        self.rows.append((label, seconds))
        print(f"{label:<70} {seconds:8.2f} s", flush=True)
        return value


def page(name: str, **state):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP / name), default_timeout=3600)
    for key, value in state.items():
        at.session_state[key] = value
    return at


def checked(at):
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    if at.error:
        raise RuntimeError([e.value for e in at.error])
    return at


def keyed(widgets, name: str):
    """The widget keyed ``name`` on its context (``dashboard.text_inputs.context_key``: name + a hash)."""
    return next(w for w in widgets if w.key == name or re.fullmatch(f"{name}_[0-9a-f]{{10}}", w.key or ""))


def click(at, key: str, customdata: list):
    """The rerun a click on a chart point starts (the selection state a browser sends)."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    chart = next(chart for chart in at.get("plotly_chart") if chart.key == key)
    states = at._tree.get_widget_states()
    selection = {"selection": {"points": [{"customdata": customdata}], "point_indices": [0], "box": [], "lasso": []}}
    states.widgets.append(WidgetState(id=chart.proto.id, string_value=json.dumps(selection)))
    return checked(at._run(states))


def import_analysis() -> None:
    """What the pages import or build once per server process: the page modules and the analysis
    libraries (plotly, sklearn, scipy, umap), spaCy's English tokenizer (the first ``spacy.blank``),
    the lookup lemmatizer's tables, sklearn's first fit."""
    import numpy as np
    import scipy.cluster.hierarchy  # noqa: F401
    import sklearn.cluster  # noqa: F401
    import sklearn.decomposition  # noqa: F401
    import sklearn.metrics  # noqa: F401
    import umap  # noqa: F401

    from spacy_contextual.analysis.clusters import cluster
    from spacy_contextual.analysis.lemmas import english_lemmatizer
    from spacy_contextual.analysis.occurrences import english_tokenizer
    from spacy_contextual.dashboard import (  # noqa: F401
        compare_models,
        cove_attention,
        layer_probe,
        layer_weights,
        sense_explorer,  # noqa: F401
    )

    english_tokenizer()
    english_lemmatizer()
    cluster(np.random.RandomState(0).randn(12, 4), "kmeans")  # sklearn's first fit sets up its thread pools


def demo_timings(timer: Timer) -> None:
    import streamlit as st

    from spacy_contextual.dashboard.encoder_choice import cached_encoder, default_model

    timer("first model load: bundled ELMo", lambda: cached_encoder("elmo", default_model("elmo")))
    timer("first model load: bundled CoVe (MT model)", lambda: cached_encoder("cove", default_model("cove")))
    timer("first imports, spaCy tokenizer + lemmatizer, first KMeans (once per process)", import_analysis)
    timer("first page run in the process (streamlit's own start)", lambda: checked(page("Home.py").run()))
    st.cache_data.clear()  # every page below starts with empty data caches, as for a new user
    timer("Home: ready", lambda: checked(page("Home.py").run()))

    explorer = page("pages/1_Sense_explorer.py")
    timer("Sense explorer: ready ('play', 20 occurrences; PCA, clusters, every layer)", lambda: checked(explorer.run()))
    timer("  click a point (marks it and its neighbours)", lambda: click(explorer, "sense_chart", [5, "", "", "play"]))
    color = keyed(explorer.radio, "sense_color")
    timer("  colour by form (view option)", lambda: checked(color.set_value("form").run()))
    timer(
        "  neighbours k = 20 (view option)",
        lambda: checked(explorer.slider(key="sense_neighbours").set_value(20).run()),
    )
    timer("  layer LSTM-1 (new vectors)", lambda: checked(keyed(explorer.selectbox, "sense_layer").set_value(1).run()))
    timer(
        "  learned EWT tagger mix",
        lambda: checked(keyed(explorer.selectbox, "sense_mix").set_value("learned by the EWT tagger").run()),
    )
    timer("  another word: bank", lambda: checked(explorer.text_input(key="sense_word").set_value("bank").run()))
    timer(
        "  UMAP selected (PCA shown until computed)",
        lambda: checked(explorer.radio(key="sense_projection").set_value("umap").run()),
    )
    timer(
        "  Compute UMAP (first in process: numba compiles)",
        lambda: checked(explorer.button(key="sense_umap").click().run()),
    )
    corpus_search = explorer.toggle(key="sense_corpus_search")
    timer(
        "  sentence-level neighbours on (embeds the 62 sentences)", lambda: checked(corpus_search.set_value(True).run())
    )

    weights = page("pages/2_Layer_weights.py")
    timer("Layer weights: ready (the shipped EWT example)", lambda: checked(weights.run()))

    attention = page("pages/3_CoVe_attention.py")
    timer("CoVe attention: ready (greedy translation + heatmap)", lambda: checked(attention.run()))
    timer("  lines view (view option)", lambda: checked(attention.radio(key="attention_view").set_value("lines").run()))
    timer("  beam 5", lambda: checked(attention.radio(key="attention_decoding").set_value("beam").run()))

    probe = page("pages/4_Layer_probe.py")
    timer("Layer probe: ready (before Run)", lambda: checked(probe.run()))
    timer("  Run the probe (4 words, 62 instances, ELMo)", lambda: checked(probe.button(key="probe_run").click().run()))

    senses = ROOT.parent / "shared" / "data" / "senses" / "serve.jsonl.gz"
    home = checked(page("Home.py").run())
    checked(home.switch_page("pages/4_Layer_probe.py").run())
    home.session_state["probe_source"], home.session_state["probe_jsonl_file"] = "Sense-labelled JSONL", str(senses)
    checked(home.run())
    timer("  Run the probe on serve.jsonl.gz (400 of 4,378 instances)",
          lambda: checked(home.button(key="probe_run").click().run()))  # fmt: skip
    timer("  click the LSTM-2 bar: the Sense explorer on the probe's sample", lambda: click(home, "probe_chart",
                                                                                          ["serve", 2]))  # fmt: skip
    if home.title[0].value != "Sense explorer":
        raise RuntimeError("the bar click did not open the Sense explorer")

    compare = page("pages/5_Compare_models.py")
    timer("Compare models: ready (ELMo vs CoVe on 'play')", lambda: checked(compare.run()))
    timer("  click a point (linked in both)", lambda: click(compare, "compare_chart_a", [3, "", "", "play"]))
    timer("  neighbours k = 5", lambda: checked(compare.slider(key="compare_k").set_value(5).run()))


def large_timings(timer: Timer, corpus: Path) -> None:
    os.environ["SPACY_CONTEXTUAL_SENSE_DATA"] = str(corpus.parent)
    at = page("pages/1_Sense_explorer.py", sense_source="Sense-labelled JSONL", sense_jsonl_file=str(corpus))
    timer(
        "Sense explorer: first load (read, embed every sentence, PCA, clusters, every layer)", lambda: checked(at.run())
    )
    print(f"  ({at.caption[0].value.split(' in ')[0]})")
    timer("  click another occurrence (neighbours)", lambda: click(at, "sense_chart", [123, "", "", ""]))
    timer("  neighbours k = 25", lambda: checked(at.slider(key="sense_neighbours").set_value(25).run()))
    timer("  colour by form", lambda: checked(keyed(at.radio, "sense_color").set_value("form").run()))
    timer("  fixed k = 3 (KMeans)", lambda: checked(at.checkbox(key="sense_auto_k").uncheck().run()))
    timer("  agglomerative, k = 3", lambda: checked(at.radio(key="sense_clusters").set_value("agglomerative").run()))
    timer(
        "  layer LSTM-1 (new vectors: PCA, clusters)",
        lambda: checked(keyed(at.selectbox, "sense_layer").set_value(1).run()),
    )
    timer("  UMAP selected", lambda: checked(at.radio(key="sense_projection").set_value("umap").run()))
    timer(
        "  Compute UMAP (first in process: numba compiles)", lambda: checked(at.button(key="sense_umap").click().run())
    )
    checked(keyed(at.selectbox, "sense_layer").set_value(2).run())
    timer("  layer LSTM-2: Compute UMAP (numba compiled)", lambda: checked(at.button(key="sense_umap").click().run()))
    timer("  click after UMAP (cached)", lambda: click(at, "sense_chart", [7, "", "", ""]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=("demo", "large"), default="demo")
    parser.add_argument("--elmo-model", default="default", help="ELMo model directory, or 'default' (bundled)")
    parser.add_argument("--cove-model", default="default", help="CoVe MT model directory, or 'default' (bundled)")
    parser.add_argument("--word", default="like", help="--corpus large: the word")
    parser.add_argument("--occurrences", type=int, default=5000, help="--corpus large: how many")
    parser.add_argument("--output", type=Path, help="record the table as the newest entry of this history file")
    args = parser.parse_args()
    threads = int(os.environ["OMP_NUM_THREADS"])
    torch.set_num_threads(threads)
    os.environ["SPACY_CONTEXTUAL_ELMO_MODEL"] = args.elmo_model
    os.environ["SPACY_CONTEXTUAL_COVE_MODEL"] = args.cove_model
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {threads} thread(s)"
    timer = Timer()
    if args.corpus == "demo":
        what = "every page on the demo sentences"
        demo_timings(timer)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            corpus = Path(tmp) / "corpus" / f"{args.word}.jsonl"
            corpus.parent.mkdir()
            found = write_corpus(args.word, args.occurrences, corpus)
            what = f"the Sense explorer on {found:,} occurrences of '{args.word}'"
            large_timings(timer, corpus)
    if args.output:
        heading = f"## {time.strftime('%Y-%m-%d')}: {what} ({machine})"
        command = f"`python -m benchmarks.app_speed {' '.join(sys.argv[1:])}`"
        table = ["| interaction | seconds |", "|---|---|"]
        table += [f"| {label.strip()} | {seconds:.2f} |" for label, seconds in timer.rows]
        record_entry(args.output, "\n".join([heading, "", command, "", *table]))


if __name__ == "__main__":
    sys.exit(main())
