"""Sense explorer: every occurrence of a word, its vector at a layer (or the mix), projected (PCA or
UMAP, on a button) and clustered; the static layer next to the contextual one; click a point for its
nearest occurrences in the original space; export for the TensorFlow Embedding Projector."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ..analysis.clusters import METHODS as CLUSTER_METHODS
from ..analysis.clusters import cluster
from ..analysis.neighbours import highlight, neighbour_table
from ..analysis.occurrences import InputError, corpus_words, find_occurrences
from ..analysis.projection import METHODS as PROJECTION_METHODS
from ..analysis.projection import project
from ..analysis.projector_export import projector_zip
from ..analysis.sense_plots import point_frame, sense_scatter, silhouette_figure
from ..analysis.vectors import MIX, layer_options, occurrence_layers, select_layer
from .common import cached_encoder, encoder_or_stop, encoder_picker, word_input
from .corpus_picker import DEMO, corpus_picker

KEY = "sense"
MAX_OCCURRENCES = 5000


@st.cache_data(max_entries=8, show_spinner="Embedding the sentences…")
def embed_occurrences(
    kind: str, model: str, corpus_digest: str, word: str, max_occurrences: int, _records, _occurrences
) -> np.ndarray:
    """All layers of every occurrence; keyed by encoder, model, corpus and word (records are not hashed)."""
    return occurrence_layers(cached_encoder(kind, model).embed_sentences, _records, _occurrences)


@st.cache_data(max_entries=32, show_spinner="Clustering…")
def cached_cluster(vectors: np.ndarray, method: str, k):
    return cluster(vectors, method, k)


@st.cache_data(max_entries=32, show_spinner="Projecting…")
def cached_projection(vectors: np.ndarray, method: str) -> np.ndarray:
    return project(vectors, method)


def layer_label(layer) -> str:
    return (
        "mix (mean of all layers)"
        if layer == MIX
        else ("0 (static: context-independent)" if layer == 0 else str(layer))
    )


def render() -> None:
    st.title("Sense explorer")
    kind, model = encoder_picker(KEY)
    records, digest, source = corpus_picker(KEY)
    words = corpus_words(records)
    with st.sidebar:
        if st.session_state.get(f"{KEY}_word_corpus") != digest:  # a new corpus starts at its own word
            st.session_state[f"{KEY}_word_corpus"] = digest
            st.session_state[f"{KEY}_word"] = "play" if source == DEMO else (words[0] if words else "")
        word = word_input("Word", key=f"{KEY}_word").strip().lower()
        if source == DEMO:
            st.caption("Demo words: " + ", ".join(words))
        max_occurrences = st.number_input(
            "At most this many occurrences", 3, MAX_OCCURRENCES, MAX_OCCURRENCES, step=500, key=f"{KEY}_max"
        )
    try:
        occurrences = find_occurrences(records, word)
    except InputError as error:
        st.error(str(error))
        st.stop()
    if len(occurrences) > max_occurrences:
        st.warning(f"'{word}' occurs {len(occurrences):,} times; using the first {int(max_occurrences):,}.")
        occurrences = occurrences.iloc[: int(max_occurrences)]
    encoder_or_stop(kind, model)  # a missing model stops here with a message
    layers = embed_occurrences(kind, model, digest, word, int(max_occurrences), records, occurrences)
    has_senses = occurrences["sense"].notna().any()
    st.caption(
        f"{len(occurrences):,} occurrences of **{word}** in {len(set(occurrences['record'])):,} sentences · "
        f"{kind} ({model}) · {layers.shape[1]} layers of {layers.shape[2]} dimensions"
        + (f" · gold senses: {occurrences['sense'].nunique()}" if has_senses else "")
    )

    controls = st.columns([1.2, 1, 1, 1, 1])
    options = layer_options(layers.shape[1])
    layer = controls[0].selectbox("Layer", options, index=len(options) - 2, format_func=layer_label, key=f"{KEY}_layer")
    projection = controls[1].radio(
        "Projection", PROJECTION_METHODS, format_func=str.upper, horizontal=True, key=f"{KEY}_projection"
    )
    method = controls[2].radio("Clusters", CLUSTER_METHODS, horizontal=True, key=f"{KEY}_clusters")
    auto_k = controls[3].checkbox("k by silhouette", value=True, key=f"{KEY}_auto_k")
    k = None if auto_k else controls[3].slider("k", 1, 12, 3, key=f"{KEY}_k")
    color_options = ["sense", "cluster"] if has_senses else ["cluster"]
    color = controls[4].radio("Colour by", color_options, horizontal=True, key=f"{KEY}_color")

    vectors = select_layer(layers, layer)
    static = select_layer(layers, 0)
    request = (kind, model, digest, word, len(occurrences), str(layer), projection)
    if st.button(f"Project with {projection.upper()}", type="primary", key=f"{KEY}_run"):
        st.session_state[f"{KEY}_projected"] = request
    if st.session_state.get(f"{KEY}_projected") != request:
        st.info(f"{len(occurrences):,} occurrences ready. Press **Project with {projection.upper()}** to draw them.")
        if projection == "umap":
            st.caption("The first UMAP in a server process also compiles numba code (10–30 s on 2 CPUs).")
        st.stop()

    clustering = cached_cluster(vectors, method, k)
    contextual_frame = point_frame(records, occurrences, cached_projection(vectors, projection), clustering.labels)
    static_frame = point_frame(records, occurrences, cached_projection(static, projection), clustering.labels)
    left, right = st.columns(2)
    with left:
        event = st.plotly_chart(
            sense_scatter(contextual_frame, color, f"contextual: layer {layer_label(layer)}"),
            on_select="rerun",
            selection_mode="points",
            key=f"{KEY}_chart",
            width="stretch",
        )
    with right:
        st.plotly_chart(
            sense_scatter(
                static_frame, color, "static: GloVe (layer 0)" if kind == "cove" else "static: layer 0 (char CNN)"
            ),
            key=f"{KEY}_static_chart",
            width="stretch",
        )
        st.caption("Layer 0 sees the word alone: every occurrence of a word form gets the same vector.")
    summary = f"{clustering.k} cluster{'s' if clustering.k != 1 else ''} ({method}"
    summary += ", k by silhouette)" if clustering.silhouettes else ")"
    st.caption(summary + " · click a point to see its nearest occurrences")
    if clustering.silhouettes:
        with st.expander("Silhouette by k"):
            st.plotly_chart(silhouette_figure(clustering.silhouettes), key=f"{KEY}_silhouette")

    render_neighbours(records, occurrences, vectors, selected_occurrence(event))
    metadata = occurrences.assign(cluster=clustering.labels)[["token", "sense", "cluster", "sentence"]]
    st.download_button(
        "Export for the TensorFlow Embedding Projector (tensors.tsv + metadata.tsv)",
        data=lambda: projector_zip(vectors, metadata, name=f"{word}-{kind}-layer-{layer}"),  # built on click
        file_name=f"{word}_{kind}_layer_{layer}_projector.zip",
        mime="application/zip",
        key=f"{KEY}_export",
    )


def selected_occurrence(event):
    points = (event or {}).get("selection", {}).get("points", []) if event else []
    for point in points:
        data = point.get("customdata")
        if data:
            return int(data[0])
    return None


def render_neighbours(records, occurrences, vectors, clicked) -> None:
    st.subheader("Nearest occurrences (cosine, in the original space)")
    columns = st.columns([3, 1])
    choices = list(range(len(occurrences)))
    if clicked is not None and clicked != st.session_state.get(
        f"{KEY}_last_click"
    ):  # a new click, not a kept selection
        st.session_state[f"{KEY}_query"] = clicked
    st.session_state[f"{KEY}_last_click"] = clicked
    query = columns[0].selectbox(
        "Occurrence",
        choices,
        format_func=lambda i: f"#{i}: " + occurrences["sentence"].iloc[i][:120],
        key=f"{KEY}_query",
    )
    k = columns[1].slider("Neighbours", 1, 50, 10, key=f"{KEY}_neighbours")
    row = occurrences.iloc[query]
    st.markdown(
        "**Query** · "
        + highlight(records[row["record"]]["tokens"], row["position"])
        + (f" · _{row['sense']}_" if row["sense"] else "")
    )
    table = neighbour_table(records, occurrences, vectors, query, k)
    lines = [
        f"{rank}. `{similarity:.3f}` " + (f"_{sense}_ · " if sense else "") + sentence
        for rank, (similarity, sense, sentence) in enumerate(
            zip(table["similarity"], table["sense"], table["sentence"], strict=True), start=1
        )
    ]
    st.markdown("\n".join(lines))
