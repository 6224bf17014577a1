"""Layer probe: word-sense 1-NN accuracy per layer (stratified 5-fold CV, ``analysis.sense_probe``) on a
sense-labelled corpus, sampled per sense, with bootstrap error bars, next to the most-frequent-sense
baseline; a click on a bar opens that word and layer in the Sense explorer."""

from __future__ import annotations

import streamlit as st

from ..analysis.probe_plot import probe_figure, probe_frame
from ..analysis.sense_probe import MIN_INSTANCES_PER_SENSE, TYPE_LEVEL_LAYER, labelled_instances, sense_probe
from .common import cached_encoder, clicked_point, encoder_or_stop, encoder_picker, open_page
from .corpus_picker import DEMO, JSONL, UPLOAD, corpus_picker

KEY = "probe"
DEFAULT_MAX_INSTANCES = 400
FOLDS = 5


@st.cache_data(max_entries=16, show_spinner="Embedding the instances and running the probe…")
def cached_probe(kind: str, model: str, corpus_digest: str, max_instances: int, seed: int, _records) -> list[dict]:
    encoder = cached_encoder(kind, model)
    return sense_probe(_records, encoder.embed_sentences, FOLDS, seed, max_instances, encoder.layer_labels)


def render() -> None:
    st.title("Layer probe")
    st.markdown(
        "Which layer knows the sense? Each instance's vector at layer j is labelled with the sense whose centroid "
        f"(over the training folds) is nearest: 1-NN, {FOLDS}-fold cross-validation, the ELMo paper's WSD method. "
        "Folds keep every sense's share; the baseline is the most frequent sense of the training folds."
    )
    kind, model = encoder_picker(KEY)
    records, digest, source = corpus_picker(KEY, sources=(DEMO, JSONL, UPLOAD))
    with st.sidebar:
        max_instances = int(
            st.number_input(
                "Instances per word (sampled per sense)", 10, 10_000, DEFAULT_MAX_INSTANCES, step=100, key=f"{KEY}_max",
                help="A random sample (seeded) that keeps each sense's share; every sense keeps at least "
                f"{MIN_INSTANCES_PER_SENSE} instances where it has them.",
            )
        )  # fmt: skip
        seed = int(st.number_input("Seed", 0, 10_000, 0, key=f"{KEY}_seed"))
    instances = labelled_instances(records)
    if not instances:
        st.error("This corpus has no sense labels: choose the demo sentences or a sense-labelled JSONL file.")
        return
    encoder_or_stop(kind, model)
    request = (kind, model, digest, max_instances, seed)
    words = {item["word"] for item in instances}
    label = f"Run the probe on {len(words)} word{'s' if len(words) > 1 else ''} ({len(instances):,} instances)"
    if st.button(label, type="primary", key=f"{KEY}_run"):
        st.session_state[f"{KEY}_request"] = request
    if st.session_state.get(f"{KEY}_request") != request:
        st.info("Press **Run the probe** (it embeds every sampled instance once; large files take a while).")
        return
    try:
        results = cached_probe(kind, model, digest, max_instances, seed, instances)
    except ValueError as error:  # e.g. a word with fewer instances than folds
        st.error(f"The probe cannot run on this corpus: {error}")
        return
    follow_bar_click(kind, model, source)
    for result in results:
        for warning in result["warnings"]:
            st.warning(warning)
    st.plotly_chart(
        probe_figure(results), on_select="rerun", selection_mode="points", key=f"{KEY}_chart", width="stretch"
    )
    type_level = results[0]["layers"][TYPE_LEVEL_LAYER]
    st.caption(
        f"Error bars: 95 % bootstrap intervals over the instances. {type_level} (hatched) is type-level: one vector "
        "per word form whatever the context, so its score only says how well the word form (e.g. hard / harder) "
        "predicts the sense, with ties broken arbitrarily. **Click a bar** to open that word and layer in the "
        "Sense explorer."
    )
    st.dataframe(summary_table(results), hide_index=True, key=f"{KEY}_table")


def summary_table(results: list[dict]):
    frame = probe_frame(results)
    extra = {
        r["word"]: (r["majority_share"], ", ".join(f"{s} {c}" for s, c in r["sense_counts"].items())) for r in results
    }
    frame["majority share (training folds)"] = [extra[w][0] for w in frame["word"]]
    frame["senses (sampled)"] = [extra[w][1] for w in frame["word"]]
    return frame.drop(columns=["layer_index"])


def follow_bar_click(kind: str, model: str, source: str) -> None:
    """A click on a layer's bar opens the Sense explorer on that word, at that layer, on this corpus."""
    clicked = clicked_point(f"{KEY}_chart")
    if clicked is None or int(clicked[1]) < 0:  # nothing clicked, or the baseline
        return
    state = {
        "encoder": kind,
        f"model_{kind}": model,
        "source": source,
        "word": str(clicked[0]),
        "layer": int(clicked[1]),
    }
    if source == JSONL:
        state["jsonl_file"] = st.session_state.get(f"{KEY}_jsonl_file")
        state["jsonl_path"] = st.session_state.get(f"{KEY}_jsonl_path", "")
    open_page("sense_explorer", state)
