"""Sense explorer: every occurrence of a word, its vector at a layer (or a mix), projected (PCA live,
UMAP on demand and cached) and clustered, with linked views: click a point and it and its k nearest
occurrences are marked on the scatter while the neighbour panel beside it lists them as aligned KWIC
lines (precision@k against gold senses); every layer side by side with its sense-purity score; the
type-level layer as one labelled point per word form; the nearest tokens of any word in the corpus;
export for the TensorFlow Embedding Projector."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ..analysis.clusters import METHODS as CLUSTER_METHODS
from ..analysis.clusters import cluster
from ..analysis.corpus_index import build_token_index, nearest_tokens
from ..analysis.layer_weights import example_mixes
from ..analysis.neighbours import kwic_html, neighbour_table, precision_at_k
from ..analysis.occurrences import InputError, find_occurrences
from ..analysis.projection import project
from ..analysis.projector_export import projector_zip
from ..analysis.purity import knn_sense_accuracy, silhouette, structure_strength, word_form_accuracy
from ..analysis.sense_plots import (
    point_frame,
    sense_scatter,
    silhouette_figure,
    small_multiples,
    word_form_figure,
    word_form_frame,
)
from ..analysis.sense_probe import TYPE_LEVEL_LAYER
from ..analysis.vectors import layer_options, select_layer
from .common import (
    cached_encoder,
    cached_occurrence_layers,
    clicked_point,
    encoder_or_stop,
    encoder_picker,
    follow_click,
    layer_label,
    opened,
)
from .corpus_picker import corpus_picker, word_picker

KEY = "sense"
MAX_OCCURRENCES = 5000
PURITY_K = 5
UNIFORM = "uniform (1/L)"


@st.cache_data(max_entries=32, show_spinner="Clustering…")
def cached_cluster(vectors: np.ndarray, method: str, k):
    return cluster(vectors, method, k)


@st.cache_data(max_entries=64, show_spinner="Projecting…")
def cached_projection(vectors: np.ndarray, method: str):
    return project(vectors, method)


@st.cache_data(max_entries=16, show_spinner="Scoring every layer…")
def layer_panels(layers: np.ndarray, weights, senses: tuple, forms: tuple, clusters: np.ndarray) -> list[dict]:
    """Per layer and the mix: PCA coordinates and a sense-purity score (kNN sense accuracy with gold
    senses, the word-form majority for the type-level layer, else the silhouette of the clusters)."""
    gold = all(s is not None for s in senses) and len(set(senses)) > 1
    panels = []
    for layer in layer_options(layers.shape[1]):
        vectors = select_layer(layers, layer, weights)
        if layer == TYPE_LEVEL_LAYER:
            score = ("word-form majority (upper bound)", word_form_accuracy(forms, senses)) if gold else None
        elif gold:
            score = (f"{PURITY_K}-NN sense accuracy", knn_sense_accuracy(vectors, senses, PURITY_K))
        else:
            value = silhouette(vectors, clusters)
            score = ("silhouette of the clusters", value) if value is not None else None
        coords = None if layer == TYPE_LEVEL_LAYER else project(vectors, "pca")
        panels.append({"layer": layer, "projection": coords, "score": score})
    return panels


@st.cache_data(max_entries=16, show_spinner=False)
def cached_word_forms(static: np.ndarray, tokens: tuple, senses: tuple):
    occurrences = pd.DataFrame({"token": tokens, "sense": senses})
    return word_form_frame(occurrences, static)


@st.cache_data(max_entries=4, show_spinner="Embedding the corpus for sentence-level neighbours…")
def cached_token_index(kind: str, model: str, corpus_digest: str, _records):
    return build_token_index(cached_encoder(kind, model).embed_sentences, _records)


def token_senses(occurrences) -> tuple[tuple, tuple]:
    """The occurrences' tokens and gold senses (None where there is none), hashable for the caches."""
    return tuple(occurrences["token"]), tuple(occurrences["sense"].where(occurrences["sense"].notna(), None))


def mix_choices(kind: str, n_layers: int) -> dict[str, list[float] | None]:
    """The mixes offered: uniform, and the shipped EWT mixes for a 3-layer ELMo."""
    choices: dict[str, list[float] | None] = {UNIFORM: None}
    if kind == "elmo" and n_layers == 3:
        mixes, _ = example_mixes()
        for component, group in mixes.groupby("component", sort=False):
            choices[f"learned by the EWT {component}"] = group.sort_values("layer")["weight"].tolist()
    return choices


def apply_opened() -> None:
    """A page that sent us here (the layer probe) names the encoder, model, corpus, word and layer."""
    state = opened("sense_explorer")
    if not state:
        return
    for name, value in state.items():
        st.session_state[f"{KEY}_{name}"] = value
    st.session_state[f"{KEY}_keep_word"] = True


def render() -> None:
    st.title("Sense explorer")
    apply_opened()
    kind, model = encoder_picker(KEY)
    records, digest, source = corpus_picker(KEY)
    word = word_picker(KEY, records, digest, source)
    with st.sidebar:
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
    embedder = encoder_or_stop(kind, model)  # a missing model stops here with a message
    layers = cached_occurrence_layers(kind, model, digest, word, int(max_occurrences), records, occurrences)
    labels = embedder.layer_labels
    has_senses = occurrences["sense"].notna().any()
    forms = occurrences["token"].value_counts()
    st.caption(
        f"{len(occurrences):,} occurrences of **{word}** in {len(set(occurrences['record'])):,} sentences · "
        f"forms: {', '.join(f'{f} ({c:,})' for f, c in forms.head(6).items())} · {kind} ({model}) · "
        f"{layers.shape[1]} layers ({', '.join(labels)}) of {layers.shape[2]} dimensions"
        + (f" · gold senses: {occurrences['sense'].nunique()}" if has_senses else "")
    )

    mixes = mix_choices(kind, layers.shape[1])
    controls = st.columns([1.3, 1.1, 1.2, 1.4, 1.2, 1.0])
    if st.session_state.get(f"{KEY}_mix") not in mixes:
        st.session_state[f"{KEY}_mix"] = UNIFORM
    mix_name = controls[0].selectbox("Mix", list(mixes), key=f"{KEY}_mix", help="the weights of the 'mix' layer")
    weights = mixes[mix_name]
    options = layer_options(layers.shape[1])
    if st.session_state.get(f"{KEY}_layer") not in options:
        st.session_state[f"{KEY}_layer"] = options[-2]
    layer = controls[1].selectbox(
        "Layer", options, format_func=lambda j: layer_label(labels, j, mix_name.split(" (")[0]), key=f"{KEY}_layer"
    )
    projection = controls[2].radio("Projection", ("pca", "umap"), format_func=str.upper, horizontal=True,
                                   key=f"{KEY}_projection")  # fmt: skip
    color_options = ["sense", "cluster", "form"] if has_senses else ["cluster", "form"]
    color = controls[3].radio("Colour by", color_options, horizontal=True, key=f"{KEY}_color")
    method = controls[4].radio("Clusters", CLUSTER_METHODS, horizontal=True, key=f"{KEY}_clusters")
    auto_k = controls[5].checkbox("k by silhouette", value=True, key=f"{KEY}_auto_k")
    k = None if auto_k else controls[5].slider("k", 1, 12, 3, key=f"{KEY}_k")

    vectors = select_layer(layers, layer, weights)
    clustering = cached_cluster(vectors, method, k)
    coords = cached_projection(vectors, "pca")
    umap_key = (kind, model, digest, word, len(occurrences), str(layer), mix_name)
    computed = st.session_state.setdefault(f"{KEY}_umap_done", set())
    if projection == "umap" and umap_key in computed:
        coords = cached_projection(vectors, "umap")
    frame = point_frame(records, occurrences, coords.coords, clustering.labels)

    clicked = clicked_point(f"{KEY}_chart")
    follow_click(f"{KEY}_chart", f"{KEY}_query", None if clicked is None else int(clicked[0]))
    left, right = st.columns([1.05, 1])
    with right:
        query, table = render_neighbours(records, occurrences, vectors)
    with left:
        if projection == "umap" and umap_key not in computed:
            st.info("UMAP is computed on demand (then cached for this word, layer and mix); PCA is shown until then.")
            if st.button("Compute UMAP", type="primary", key=f"{KEY}_umap"):
                cached_projection(vectors, "umap")
                computed.add(umap_key)
                st.rerun()
        if layer == TYPE_LEVEL_LAYER:
            forms_frame, titles = cached_word_forms(vectors, *token_senses(occurrences))
            st.plotly_chart(
                word_form_figure(forms_frame, f"{labels[0]}: one point per word form (type-level)", titles, 620),
                key=f"{KEY}_forms_chart",
                width="stretch",
            )
            st.caption("A type-level layer gives every occurrence of a word form the same vector: one point each.")
        else:
            title = f"{layer_label(labels, layer, mix_name.split(' (')[0])}: {len(occurrences):,} occurrences"
            st.plotly_chart(
                sense_scatter(frame, color, title, coords.axis_titles, query, table["occurrence"].tolist()),
                on_select="rerun",
                selection_mode="points",
                key=f"{KEY}_chart",
                width="stretch",
            )
    render_clusters(clustering, vectors, method)
    render_small_multiples(layers, weights, labels, mix_name, occurrences, records, clustering, color)
    render_corpus_neighbours(kind, model, digest, records, occurrences, vectors, layer, weights, query, word)
    metadata = occurrences.assign(cluster=clustering.labels)[["token", "sense", "cluster", "sentence"]]
    st.download_button(
        "Export for the TensorFlow Embedding Projector (tensors.tsv + metadata.tsv)",
        data=lambda: projector_zip(vectors, metadata, name=f"{word}-{kind}-layer-{layer}"),  # built on click
        file_name=f"{word}_{kind}_layer_{layer}_projector.zip",
        mime="application/zip",
        key=f"{KEY}_export",
    )


def render_neighbours(records, occurrences, vectors):
    st.markdown("**Nearest occurrences** (cosine, in the original space) · click a point to choose")
    columns = st.columns([3, 1])
    if st.session_state.get(f"{KEY}_query", 0) >= len(occurrences):
        st.session_state[f"{KEY}_query"] = 0
    query = columns[0].selectbox(
        "Occurrence",
        list(range(len(occurrences))),
        format_func=lambda i: f"#{i}: " + occurrences["sentence"].iloc[i][:100],
        key=f"{KEY}_query",
    )
    k = columns[1].slider("Neighbours k", 1, 50, 10, key=f"{KEY}_neighbours")
    table = neighbour_table(records, occurrences, vectors, query, k)
    query_sense = occurrences["sense"].iloc[query]
    precision = precision_at_k(table, query_sense)
    summary = f"Query #{query}" + (f" · sense **{query_sense}**" if query_sense else "")
    if precision is not None:
        summary += f" · same-sense precision@{len(table)} = **{precision:.2f}**"
    st.markdown(summary)
    st.html(kwic_html(table, query_sense))
    return query, table


def render_clusters(clustering, vectors, method) -> None:
    if clustering.k < 2:
        st.caption("One cluster: every occurrence has the same vector at this layer.")
        return
    score = clustering.silhouettes.get(clustering.k) if clustering.silhouettes else None
    if score is None:
        score = silhouette(vectors, clustering.labels)
    strength = structure_strength(score) if score is not None else "unknown"
    how = "k by silhouette" if clustering.silhouettes else "k fixed"
    text = f"{clustering.k} clusters ({method}, {how}); silhouette {score:.2f}: {strength} cluster structure."
    if strength in ("weak", "no substantial"):
        st.warning(
            text + " The clusters cut a continuum into regions; do not read them as discovered senses."
            " Colour by sense (if labelled) to compare."
        )
    else:
        st.caption(text)
    if clustering.silhouettes:
        with st.expander("Silhouette by k"):
            st.plotly_chart(silhouette_figure(clustering.silhouettes), key=f"{KEY}_silhouette")


def render_small_multiples(layers, weights, labels, mix_name, occurrences, records, clustering, color) -> None:
    st.subheader("Every layer side by side")
    tokens, senses = token_senses(occurrences)
    panels = layer_panels(layers, weights, senses, tokens, clustering.labels)
    figures = []
    for panel in panels:
        name = layer_label(labels, panel["layer"], mix_name.split(" (")[0])
        score = f"{panel['score'][0]} {panel['score'][1]:.2f}" if panel["score"] else "no score"
        entry = {"title": f"<b>{name}</b><br>{score}"}
        if panel["layer"] == TYPE_LEVEL_LAYER:
            entry["word_forms"], entry["axis_titles"] = cached_word_forms(layers[:, 0], *token_senses(occurrences))
        else:
            coords = panel["projection"]
            entry["points"] = point_frame(records, occurrences, coords.coords, clustering.labels)
            entry["axis_titles"] = coords.axis_titles
        figures.append(entry)
    st.plotly_chart(small_multiples(figures, color), key=f"{KEY}_multiples", width="stretch")
    st.caption(
        f"PCA of each layer. Scores: with gold senses, the share of occurrences whose {PURITY_K} nearest "
        "occurrences mostly share their sense (the type-level layer: the best a word form alone can do, each form's "
        "majority sense); without, the silhouette of the clusters. Higher = senses better separated."
    )


def render_corpus_neighbours(kind, model, digest, records, occurrences, vectors, layer, weights, query, word):
    st.subheader("Nearest tokens of any word (sentence-level neighbours)")
    if not st.toggle("Search the whole corpus", key=f"{KEY}_corpus_search"):
        st.caption("Embeds every token of the corpus once (up to 30,000 tokens), then ranks them against the query.")
        return
    index = cached_token_index(kind, model, digest, records)
    row = occurrences.iloc[query]
    other_words = st.checkbox(f"Leave out '{row['token']}' itself", key=f"{KEY}_other_words")
    hits = nearest_tokens(
        index, records, vectors[query], layer, weights, k=10, exclude=(int(row["record"]), int(row["position"])),
        other_words_only=row["token"] if other_words else None,
    )  # fmt: skip
    st.caption(
        f"Query #{query} ({row['token']}) against {len(index.record):,} tokens of {index.sentences:,} of the corpus's "
        f"{index.total_sentences:,} sentences"
    )
    st.html(kwic_html(hits))
