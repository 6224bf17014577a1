"""Layer probe: word-sense 1-NN accuracy per layer (stratified 5-fold CV, ``analysis.sense_probe``) on a
sense-labelled corpus, sampled per sense, with bootstrap error bars, next to the most-frequent-sense
baseline and the majority-sense share; a click on a bar, or the "Open in Sense explorer" button, opens
that word and layer in the Sense explorer on the probe's own sample (its vectors already in the shared
store, so it opens at once). The corpus, the settings and the results stay while another page is open."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ..analysis.layer_scores import PURITY_VS_PROBE
from ..analysis.markdown import escape_markdown
from ..analysis.probe_plot import probe_figure, probe_frame
from ..analysis.sense_probe import (
    MIN_INSTANCES_PER_SENSE,
    labelled_instances,
    layer_heading,
    sample_per_sense,
    sampled_counts,
    sense_probe,
)
from . import session
from .chart_events import clicked_point
from .corpus_picker import CORPUS_KEY, DEMO, JSONL, UPLOAD, corpus_picker
from .embedding_progress import embedding_estimate, occurrence_layers, occurrence_store
from .encoder_choice import cached_encoder, default_model, encoder_or_stop, encoder_picker
from .page_links import open_page

KEY = "probe"
DEFAULT_MAX_INSTANCES = 400
FOLDS = 5


@st.cache_data(max_entries=16, show_spinner="Running the probe…")
def cached_probe(kind: str, model: str, corpus_digest: str, max_instances: int, seed: int, _records, _instances):
    """The probe on vectors from the shared store (embedded before this is called)."""
    store = occurrence_store(kind, model, corpus_digest, _records)
    return sense_probe(
        _instances, None, FOLDS, seed, max_instances, cached_encoder(kind, model).layer_labels,
        vectors_of=lambda items: store.layers([(item["record"], item["target"]) for item in items]),
    )  # fmt: skip


def render() -> None:
    st.title("Layer probe")
    st.markdown(
        "Which layer knows the sense? Each instance's vector at layer j is labelled with the sense whose centroid "
        f"(over the training folds) is nearest: 1-NN, {FOLDS}-fold cross-validation, the ELMo paper's WSD method. "
        "Folds keep every sense's share; the baseline is the most frequent sense of the training folds."
    )
    kind, model = encoder_picker(KEY)
    records, digest, _ = corpus_picker(KEY, sources=(DEMO, JSONL, UPLOAD))
    for parameter in ("max", "seed"):
        value = session.from_url(parameter)
        if value and value.isdigit():
            session.put(f"{KEY}_{parameter}", int(value))
    with st.sidebar:
        max_instances = int(
            st.number_input(
                "Instances per word (sampled per sense)", 10, 10_000, step=100,
                key=session.bind(f"{KEY}_max", default=DEFAULT_MAX_INSTANCES),
                help="A random sample (seeded) that keeps each sense's share; every sense keeps at least "
                f"{MIN_INSTANCES_PER_SENSE} instances where it has them.",
            )
        )  # fmt: skip
        seed = int(st.number_input("Seed", 0, 10_000, key=session.bind(f"{KEY}_seed", default=0)))
    session.mirror({
        "corpus": st.session_state.get(CORPUS_KEY), "encoder": kind,
        "model": None if model == default_model(kind) else model,
        "max": None if max_instances == DEFAULT_MAX_INSTANCES else max_instances, "seed": seed or None,
    })  # fmt: skip
    instances = labelled_instances(records)
    if not instances:
        st.error("This corpus has no sense labels: choose the demo sentences or a sense-labelled JSONL file.")
        return
    encoder_or_stop(kind, model)
    request = (kind, model, digest, max_instances, seed)
    if st.button(run_label(sampled_counts(instances, max_instances)), type="primary", key=f"{KEY}_run"):
        st.session_state[f"{KEY}_request"] = request
    st.caption(sample_note(sampled_counts(instances, max_instances), seed))
    sample = sample_per_sense(instances, max_instances, seed)
    pairs = [(item["record"], item["target"]) for item in sample]
    if st.session_state.get(f"{KEY}_request") != request:
        estimate = embedding_estimate(occurrence_store(kind, model, digest, records), pairs)
        st.info(
            "Press **Run the probe**: it embeds every sampled instance once" + (f", {estimate}." if estimate else ".")
        )
        return
    occurrence_layers(kind, model, digest, records, pairs)
    try:
        results = cached_probe(kind, model, digest, max_instances, seed, records, instances)
    except ValueError as error:  # e.g. a word with fewer instances than folds
        st.error(f"The probe cannot run on this corpus: {error}")
        return
    follow_bar_click(sample)
    for result in results:
        for warning in result["warnings"]:
            st.warning(escape_markdown(warning))  # it names words and senses of the data
    st.plotly_chart(
        probe_figure(results), on_select="rerun", selection_mode="points", key=f"{KEY}_chart", width="stretch"
    )
    open_button(results, sample)
    flat = [name for name, flag in zip(results[0]["layers"], results[0]["type_level"], strict=True) if flag]
    st.caption(
        "In plain words: **MFS** (most frequent sense) is what you score by always guessing the commonest sense; a "
        "layer is only worth something where its bar rises clearly above that baseline."
    )
    type_level = (
        f"{' and '.join(flat)} (hatched) is type-level: one vector per word form whatever the context, so nearest-"
        "centroid on it would be a tie among identical vectors, decided by how the tie is broken. Its bar is "
        "scored as what such a layer can know: each held-out instance gets its form's majority sense in the "
        "training folds (e.g. hard / harder / hardest); the table gives the same on all instances. "
        if flat
        else ""
    )
    st.caption(
        f"Error bars: 95 % bootstrap intervals over the instances. Dashed line: each word's majority-sense share (of "
        "the probed instances). MFS baseline: the held-out accuracy of always guessing the training folds' most "
        "frequent sense; with nearly tied senses it falls below the share, because holding a fold out can leave the "
        f"other sense the majority. {type_level}{PURITY_VS_PROBE}"
    )
    layers, words, senses = summary_tables(results)
    number = st.column_config.NumberColumn(format="%.3f")
    st.dataframe(layers, hide_index=True, key=f"{KEY}_table", column_config={"accuracy": number})
    st.dataframe(words, hide_index=True, key=f"{KEY}_words",
                 column_config={"majority share": number, "word form alone": number})  # fmt: skip
    st.caption(f"Senses sampled: {escape_markdown(senses)}")


def run_label(counts: dict[str, tuple[int, int]]) -> str:
    """ "Run the probe on 1 word (400 of 4,378 instances)"."""
    used, available = sum(u for u, _ in counts.values()), sum(a for _, a in counts.values())
    words = f"{len(counts)} word{'s' if len(counts) > 1 else ''}"
    return (
        f"Run the probe on {words} ({used:,} of {available:,} instances)"
        if used < available
        else (f"Run the probe on {words} ({used:,} instances)")
    )


def sample_note(counts: dict[str, tuple[int, int]], seed: int) -> str:
    """ "hard: 400 of 4,333, stratified by sense (seed 0)": how each word's instances are drawn."""
    parts = [
        f"{escape_markdown(word)}: " + (f"{used:,} of {available:,}, stratified by sense" if used < available
                                        else f"all {available:,}")
        for word, (used, available) in counts.items()
    ]  # fmt: skip
    return (
        "Instances: " + " · ".join(parts) + f" (seed {seed}; each sense keeps its share, and at least "
        f"{MIN_INSTANCES_PER_SENSE} where it has them)."
    )


def summary_tables(results: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Narrow enough for an 800 px window: (each layer's accuracy with its interval, each word's sample
    and baselines, the senses sampled as a line of text)."""
    frame = probe_frame(results)
    layers = pd.DataFrame({
        "word": frame["word"], "layer": frame["layer"], "accuracy": frame["accuracy"],
        "95 % interval": [f"{low:.2f}–{high:.2f}" for low, high in zip(frame["low"], frame["high"], strict=True)],
    })  # fmt: skip
    words = pd.DataFrame({
        "word": [r["word"] for r in results],
        "instances": [f"{r['instances']:,} of {r.get('available', r['instances']):,}" for r in results],
        "majority share": [r["majority_share"] for r in results],
        "word form alone": [r["word_form_accuracy"] for r in results],
    })  # fmt: skip
    senses = " · ".join(
        f"{r['word']}: " + ", ".join(f"{s} {c:,}" for s, c in r["sense_counts"].items()) for r in results
    )
    return layers, words, senses


def open_in_explorer(word: str, layer: int, sample: list[dict]) -> None:
    """The Sense explorer on ``word`` at ``layer``, on the instances the probe used (the session already
    holds the encoder, the model and the corpus)."""
    pairs = [(item["record"], item["target"]) for item in sample if item["word"] == word]
    open_page("sense_explorer", {"word": word, "layer": layer, "sample": pairs})


def follow_bar_click(sample: list[dict]) -> None:
    """A click on a layer's bar opens that word and layer in the Sense explorer."""
    clicked = clicked_point(f"{KEY}_chart")
    if clicked is not None and int(clicked[1]) >= 0:  # a layer's bar, not the baseline
        open_in_explorer(str(clicked[0]), int(clicked[1]), sample)


def open_button(results: list[dict], sample: list[dict]) -> None:
    """The explicit way to the Sense explorer: a word, a layer and a button (a click on a bar does the same)."""
    words = [result["word"] for result in results]
    layers = results[0]["layers"]
    columns = st.columns([1, 1, 1.2], vertical_alignment="bottom")
    word = columns[0].selectbox("Word", words, key=session.bind(f"{KEY}_open_word", default=words[0], options=words))
    options = list(range(len(layers)))
    layer = columns[1].selectbox(
        "Layer", options, format_func=lambda j: layer_heading(results[0], j),
        key=session.bind(f"{KEY}_open_layer", default=options[-1], options=options),
    )  # fmt: skip
    if columns[2].button("Open in Sense explorer", key=f"{KEY}_open", help="on this sample; or click a bar"):
        open_in_explorer(word, layer, sample)
