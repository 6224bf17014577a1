"""Layer probe: word-sense 1-NN accuracy per layer (5-fold CV, ``analysis.sense_probe``) on a
sense-labelled corpus, next to the most-frequent-sense baseline."""

from __future__ import annotations

from collections import Counter

import streamlit as st

from ..analysis.probe_plot import probe_figure, probe_frame
from ..analysis.sense_probe import sense_probe
from .common import cached_encoder, encoder_or_stop, encoder_picker
from .corpus_picker import DEMO, JSONL, UPLOAD, corpus_picker

KEY = "probe"
DEFAULT_MAX_INSTANCES = 400


@st.cache_data(max_entries=16, show_spinner="Embedding the instances and running the probe…")
def cached_probe(kind: str, model: str, corpus_digest: str, max_instances: int, _records) -> list[dict]:
    return sense_probe(_records, cached_encoder(kind, model).embed_sentences)


def labelled_instances(records: list[dict], max_instances: int) -> list[dict]:
    """The first ``max_instances`` sense-labelled records of each word, in corpus order, each with its word."""
    instances, seen = [], Counter()
    for record in records:
        if record.get("target") is None or not record.get("sense"):
            continue
        word = (record.get("word") or record["tokens"][record["target"]]).lower()
        if seen[word] < max_instances:
            seen[word] += 1
            instances.append({**record, "word": word})
    return instances


def render() -> None:
    st.title("Layer probe")
    st.markdown(
        "Which layer knows the sense? Each instance's vector at layer j is labelled with the sense whose "
        "centroid (over the training folds) is nearest (1-NN, 5-fold cross-validation, the ELMo paper's WSD method)."
    )
    kind, model = encoder_picker(KEY)
    records, digest, _ = corpus_picker(KEY, sources=(DEMO, JSONL, UPLOAD))
    with st.sidebar:
        max_instances = int(
            st.number_input(
                "Instances per word (first n)", 10, 10_000, DEFAULT_MAX_INSTANCES, step=100, key=f"{KEY}_max"
            )
        )
    records = labelled_instances(records, max_instances)
    if not records:
        st.error("This corpus has no sense labels: choose the demo sentences or a sense-labelled JSONL file.")
        return
    encoder_or_stop(kind, model)
    request = (kind, model, digest, max_instances)
    if st.button(f"Run the probe on {len(records):,} instances", type="primary", key=f"{KEY}_run"):
        st.session_state[f"{KEY}_request"] = request
    if st.session_state.get(f"{KEY}_request") != request:
        st.info("Press **Run the probe** (it embeds every instance once; large files take a while).")
        return
    try:
        results = cached_probe(kind, model, digest, max_instances, records)
    except ValueError as error:  # e.g. a word with fewer instances than folds
        st.error(f"The probe cannot run on this corpus: {error}")
        return
    st.plotly_chart(probe_figure(results), key=f"{KEY}_chart", width="stretch")
    st.dataframe(probe_frame(results), hide_index=True, key=f"{KEY}_table")
