"""Sense explorer: every occurrence of a word, its vector at a layer (or a mix), projected (PCA live,
UMAP on demand, its time estimated from runs at two sizes on this machine) and clustered, explored as in
the Embedding Projector and LIT:

* a search box marks the occurrences whose form, sense or sentence contains a text or matches a regular
  expression (``analysis.search``);
* the neighbour list beside the scatter (cosine or euclidean distance, a bar each) is linked to it: hover a
  line and its point is ringed, click it and it becomes the query (``neighbour_list``); a click on a point
  does the same;
* "Isolate" shows only the selection (the query, its k neighbours, the search matches and the slice),
  re-projected, until "Show all";
* a lasso or box on the scatter makes a slice, scored beside the whole set and the search matches
  (``analysis.slices``: size, majority sense, purity);
* the state (corpus, word, encoder, layer, occurrence, search, sample size) is in the URL (``session``).

Below: every layer side by side with its score and the majority-sense baseline; the type-level layer as
one labelled point per word form; the nearest tokens of any word in the corpus; export for the TensorFlow
Embedding Projector. A word with more occurrences than "At most" is sampled across the file, stratified by
sense (``analysis.sampling``), and the page says so. Opened from the Layer probe, it shows the probe's
sample, whose vectors the shared store already holds."""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from ..analysis.clusters import METHODS as CLUSTER_METHODS
from ..analysis.clusters import cluster
from ..analysis.corpus_index import MAX_INDEX_TOKENS, build_token_index, indexed_records, nearest_tokens
from ..analysis.estimates import LinearCost, umap_cost
from ..analysis.layer_scores import PURITY_K, PURITY_VS_PROBE, layer_scores
from ..analysis.layer_weights import example_mixes
from ..analysis.markdown import escape_markdown
from ..analysis.neighbours import (
    DISTANCE_NAMES,
    METRICS,
    chance_precision,
    kwic_html,
    nearest_neighbours,
    neighbour_table,
    precision_at_k,
    tie_note,
)
from ..analysis.occurrence_store import occurrence_pairs
from ..analysis.occurrence_vectors import MIX, layer_options, select_layer
from ..analysis.occurrences import InputError, find_occurrences
from ..analysis.projection import project
from ..analysis.projector_export import projector_zip
from ..analysis.purity import majority_share, silhouette, structure_strength
from ..analysis.sampling import draw
from ..analysis.sense_plots import (
    FADE_ABOVE,
    point_frame,
    sense_scatter,
    silhouette_figure,
    small_multiples,
    word_form_figure,
    word_form_frame,
)
from ..analysis.sense_probe import TYPE_LEVEL_LAYER
from ..analysis.slices import occurrence_votes, score_name
from . import session
from .chart_events import clicked_point, follow_click
from .corpus_picker import CORPUS_KEY, corpus_picker, word_picker
from .embedding_progress import duration, occurrence_layers, progress_bar
from .encoder_choice import cached_encoder, default_model, encoder_or_stop, encoder_picker
from .labels import layer_label, occurrence_label
from .neighbour_list import neighbour_list
from .page_links import opened
from .selection import Selection, occurrence_from_url, occurrence_parameter, render_slices, select
from .text_inputs import context_key

KEY = "sense"
MAX_OCCURRENCES = 20_000
DEFAULT_OCCURRENCES = 5000
UNIFORM = "uniform (1/L)"
TOKEN_INDEXES = 2  # corpora whose whole-corpus token index is kept (each up to 30,000 tokens × every layer)
CHART = f".st-key-{KEY}_chart .js-plotly-plot"  # the scatter, for the neighbour list's hover marks


@dataclass
class View:
    """What the controls above the scatter chose."""

    mix_name: str
    weights: list[float] | None
    layer: int | str
    projection: str
    color: str
    method: str
    k: int | None


@st.cache_data(max_entries=32, show_spinner="Clustering…")
def cached_cluster(vectors: np.ndarray, method: str, k):
    return cluster(vectors, method, k)


@st.cache_data(max_entries=64, show_spinner="Projecting…")
def cached_projection(vectors: np.ndarray, method: str):
    return project(vectors, method)


@st.cache_resource(show_spinner=False)
def umap_costs() -> dict:
    """UMAP's cost on this machine (``estimates.LinearCost``), measured once per server."""
    return {}


def umap_estimate(vectors: np.ndarray) -> LinearCost:
    """UMAP's cost, timed here the first time it is asked for, each step shown as it runs (loading UMAP,
    compiling its code on a first small run, then runs at two sizes of these vectors)."""
    costs = umap_costs()
    if "umap" not in costs:
        with st.status("Timing UMAP on this machine (once per server)…", expanded=True) as status:
            for step, run in (
                ("Loading UMAP", lambda: importlib.import_module("umap")),
                ("Compiling its code on a first small run", lambda: project(vectors[: min(len(vectors), 100)], "umap")),
            ):
                st.write(f"{step}…")
                started = time.perf_counter()
                run()
                st.write(f"{step}: {duration(time.perf_counter() - started)}")
            st.write("Timing it on two sizes of these occurrences…")
            costs["umap"] = umap_cost(vectors)
            status.update(label="UMAP timed on this machine", state="complete", expanded=False)
    return costs["umap"]


@st.cache_data(max_entries=16, show_spinner="Scoring every layer…")
def cached_layer_scores(layers: np.ndarray, weights, senses: tuple, forms: tuple, clusters: np.ndarray):
    return layer_scores(layers, weights, senses, forms, clusters)


@st.cache_data(max_entries=16, show_spinner="Scoring the occurrences…")
def cached_votes(vectors: np.ndarray, senses: tuple, forms: tuple, type_level: bool):
    return occurrence_votes(vectors, senses, forms, type_level)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_word_forms(static: np.ndarray, tokens: tuple, senses: tuple):
    occurrences = pd.DataFrame({"token": tokens, "sense": senses})
    return word_form_frame(occurrences, static)


@st.cache_resource(show_spinner=False)
def token_indexes() -> dict:
    """Whole-corpus token indexes by (encoder, model, corpus), the newest ``TOKEN_INDEXES`` of them."""
    return {}


def token_index(kind: str, model: str, digest: str, records):
    indexes, key = token_indexes(), (kind, model, digest)
    if key not in indexes:
        embed = cached_encoder(kind, model).embed_sentences
        indexes[key] = build_token_index(embed, records, progress=progress_bar("Embedding the corpus sample"))
        while len(indexes) > TOKEN_INDEXES:
            indexes.pop(next(iter(indexes)))
    return indexes[key]


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
    """The Layer probe sent us here: its word and layer, and the occurrences it used (the session already
    holds its encoder, model and corpus)."""
    state = opened("sense_explorer")
    if not state:
        return
    session.put(session.WORD, state["word"])
    session.put(session.LAYER, state["layer"])
    st.session_state[f"{KEY}_sample"] = {"word": state["word"], "pairs": state["sample"]}
    st.session_state[f"{KEY}_keep_word"] = True


def layer_from_url() -> None:
    """The URL's ``layer`` (a position, or "mix") into the session."""
    value = session.from_url("layer")
    if value is not None:
        session.put(session.LAYER, MIX if value == MIX else int(value) if value.isdigit() else value)


def render() -> None:
    st.title("Sense explorer")
    apply_opened()
    kind, model = encoder_picker(KEY)
    records, digest, source = corpus_picker(KEY)
    word = word_picker(KEY, records, digest, source)
    occurrences, sample_note, max_occurrences = chosen_occurrences(records, word)
    embedder = encoder_or_stop(kind, model)  # a missing model stops here with a message
    layers = occurrence_layers(kind, model, digest, records, occurrence_pairs(occurrences), confirm=f"{KEY}_embed")
    labels = embedder.layer_labels
    header(word, occurrences, kind, model, labels, layers, sample_note)
    layer_from_url()
    view = controls(kind, model, digest, word, labels, layers, occurrences["sense"].notna().any())
    vectors = select_layer(layers, view.layer, view.weights)
    clustering = cached_cluster(vectors, view.method, view.k)
    context = (kind, model, digest, word, len(occurrences))
    query_key = context_key(f"{KEY}_query", *context)
    clicked = clicked_point(f"{KEY}_chart")
    follow_click(f"{KEY}_chart", query_key, None if clicked is None else int(clicked[0]))
    query_name = (session.QUERY, digest, word, len(occurrences))
    linked = occurrence_from_url(occurrences)
    if linked is not None:
        session.put(query_name, linked, query_key)
    session.bind(query_key, query_name, 0, range(len(occurrences)))
    selection = select(KEY, occurrences, [f"{KEY}_chart"], context)
    left, right = st.columns([1.05, 1])
    with right:
        query, table = render_neighbours(records, occurrences, vectors, query_key, query_name)
        isolated = isolate_controls(context, query, table, selection, len(occurrences))
    with left:
        render_scatter(records, occurrences, vectors, clustering, labels, view, context, query, table, selection,
                       isolated)  # fmt: skip
    render_slice_scores(occurrences, vectors, view, selection, context)
    render_clusters(clustering, vectors, view.method)
    render_small_multiples(layers, labels, occurrences, records, clustering, view, query, table)
    render_corpus_neighbours(kind, model, digest, records, occurrences, vectors, view, query)
    metadata = occurrences.assign(cluster=clustering.labels)[["token", "sense", "cluster", "sentence"]]
    st.download_button(
        "Export for the TensorFlow Embedding Projector (tensors.tsv + metadata.tsv)",
        data=lambda: projector_zip(vectors, metadata, name=f"{word}-{kind}-layer-{view.layer}"),  # built on click
        file_name=f"{word}_{kind}_layer_{view.layer}_projector.zip",
        mime="application/zip",
        key=f"{KEY}_export",
    )
    session.mirror({
        "corpus": st.session_state.get(CORPUS_KEY), "word": word, "encoder": kind,
        "model": None if model == default_model(kind) else model, "layer": view.layer,
        "occurrence": occurrence_parameter(occurrences, query),
        "n": None if max_occurrences == DEFAULT_OCCURRENCES else max_occurrences, **selection.parameters(),
    })  # fmt: skip


def chosen_occurrences(records, word: str) -> tuple[pd.DataFrame, str, int]:
    """(the word's occurrences, how they were chosen, "At most"): the Layer probe's sample when it sent us
    here (with a button for all of them), else all of them up to ``At most``, beyond which they are sampled
    across the file, stratified by sense (``analysis.sampling.draw``)."""
    linked = session.from_url("n")
    if linked and linked.isdigit():
        session.put(f"{KEY}_max", min(max(int(linked), 3), MAX_OCCURRENCES))
    with st.sidebar:
        max_occurrences = int(st.number_input(
            "At most this many occurrences", 3, MAX_OCCURRENCES, step=500,
            key=session.bind(f"{KEY}_max", default=DEFAULT_OCCURRENCES),
            help="More are sampled across the file, stratified by sense where there are senses (seeded).",
        ))  # fmt: skip
    try:
        occurrences = find_occurrences(records, word)
    except InputError as error:
        st.error(str(error))
        st.stop()
    sample = st.session_state.get(f"{KEY}_sample")
    if sample and sample["word"] == word:
        wanted = set(map(tuple, sample["pairs"]))
        chosen = occurrences[[pair in wanted for pair in occurrence_pairs(occurrences)]]
        if len(chosen) == len(wanted):
            note = f"the Layer probe's sample: {len(chosen):,} of the {len(occurrences):,} occurrences"
            columns = st.columns([3, 2])
            columns[0].info(f"The Layer probe's sample: {len(chosen):,} of the {len(occurrences):,} occurrences, "
                            "stratified by sense.")  # fmt: skip
            if columns[1].button(f"Use all {min(len(occurrences), max_occurrences):,} occurrences", key=f"{KEY}_all"):
                st.session_state[f"{KEY}_sample"] = None
                st.rerun()
            return chosen.reset_index(drop=True), note, max_occurrences
    st.session_state[f"{KEY}_sample"] = None
    drawn = draw(occurrences["sense"].where(occurrences["sense"].notna(), None).tolist(), max_occurrences)
    note = drawn.describe("occurrences")
    if len(drawn.indices) < len(occurrences):
        st.info(f"'{escape_markdown(word)}' occurs {len(occurrences):,} times: showing {note}. Raise 'At most' "
                "in the sidebar to see more.")  # fmt: skip
    return occurrences.iloc[drawn.indices].reset_index(drop=True), note, max_occurrences


def header(word, occurrences, kind, model, labels, layers, sample_note: str) -> None:
    forms = occurrences["token"].value_counts()
    has_senses = occurrences["sense"].notna().any()
    senses = ""
    if has_senses:
        share = majority_share(occurrences["sense"].fillna("(none)").tolist())
        senses = f" · gold senses: {occurrences['sense'].nunique()} (majority sense {share:.2f} of the occurrences)"
    st.caption(
        f"{escape_markdown(sample_note)} of **{escape_markdown(word)}** in "
        f"{len(set(occurrences['record'])):,} sentences · "
        f"forms: {escape_markdown(', '.join(f'{f} ({c:,})' for f, c in forms.head(6).items()))} · {kind} "
        f"({escape_markdown(model)}) · "
        f"{layers.shape[1]} layers ({', '.join(labels)}) of {layers.shape[2]} dimensions" + senses
    )


def controls(kind, model, digest, word, labels, layers, has_senses) -> View:
    """The controls above the scatter, in rows of three (so that each keeps its width in a narrow
    window); those whose options depend on the encoder or the corpus are keyed on it. The layer is the
    session's by position (LSTM-1 under ELMo is CoVe-1 under CoVe)."""
    mixes = mix_choices(kind, layers.shape[1])
    row = st.columns(3)
    mix_key = context_key(f"{KEY}_mix", kind, model)
    mix_name = row[0].selectbox("Mix", list(mixes), key=session.bind(mix_key, default=UNIFORM, options=list(mixes)),
                                help="the weights of the 'mix' layer")  # fmt: skip
    options = layer_options(layers.shape[1])
    layer_key = session.bind(context_key(f"{KEY}_layer", kind, model), session.LAYER, options[-2], options)
    layer = row[1].selectbox(
        "Layer", options, format_func=lambda j: layer_label(labels, j, mix_name.split(" (")[0]), key=layer_key
    )
    projection = row[2].radio("Projection", ("pca", "umap"), format_func=str.upper, horizontal=True,
                              key=session.bind(f"{KEY}_projection", default="pca"))  # fmt: skip
    row = st.columns(3)
    color_options = ["sense", "cluster", "form"] if has_senses else ["cluster", "form"]
    color_key = session.bind(context_key(f"{KEY}_color", digest, word), default=color_options[0], options=color_options)
    color = row[0].radio("Colour by", color_options, horizontal=True, key=color_key)
    method = row[1].radio("Clusters", CLUSTER_METHODS, horizontal=True,
                          key=session.bind(f"{KEY}_clusters", default=CLUSTER_METHODS[0]))  # fmt: skip
    auto_k = row[2].checkbox("k by silhouette", key=session.bind(f"{KEY}_auto_k", default=True))
    k = None if auto_k else row[2].slider("k", 1, 12, key=session.bind(f"{KEY}_k", default=3))
    return View(mix_name, mixes[mix_name], layer, projection, color, method, k)


def isolate_controls(context, query: int, table: pd.DataFrame, selection: Selection, total: int) -> list[int] | None:
    """The "Isolate N points" button (the query, its k neighbours, the search matches and the slice) and,
    while isolated, "Show all"; returns the isolated occurrences, or None."""
    isolated_key = context_key(f"{KEY}_isolated", *context)
    isolated = st.session_state.get(isolated_key)
    if isolated is not None:
        if st.button(f"Show all {total:,} occurrences", key=f"{KEY}_show_all"):
            st.session_state[isolated_key] = None
            st.rerun()
        return isolated
    chosen = {query, *table["occurrence"].tolist(), *selection.matches.tolist(), *(selection.slice or [])}
    parts = [f"{len(selection.matches):,} search matches"] if len(selection.matches) else []
    parts += [f"the slice's {len(selection.slice):,}"] if selection.slice else []
    parts.append(f"the query and its {len(table)} neighbours")
    if st.button(f"Isolate {len(chosen):,} points", key=f"{KEY}_isolate", help="Show only " + ", ".join(parts)
                 + ", re-projected, as the Embedding Projector's Isolate does."):  # fmt: skip
        st.session_state[isolated_key] = sorted(chosen)
        st.rerun()
    return None


def render_scatter(records, occurrences, vectors, clustering, labels, view: View, context, query, table,
                   selection: Selection, isolated: list[int] | None) -> None:  # fmt: skip
    umap_key = (*context, str(view.layer), view.mix_name)
    computed = st.session_state.setdefault(f"{KEY}_umap_done", set())
    method = "umap" if view.projection == "umap" and umap_key in computed else "pca"
    if view.projection == "umap" and umap_key not in computed:
        cost = umap_estimate(vectors)
        st.info(
            f"UMAP is computed on demand (then cached for this word, layer and mix): about "
            f"{duration(cost.seconds(len(occurrences)))} for {len(occurrences):,} occurrences on this machine "
            f"(timed here: {cost.fixed:.1f} s + {1000 * cost.per_item:.2f} ms a point). PCA is shown until then."
        )
        if st.button(f"Compute UMAP of {len(occurrences):,} occurrences", type="primary", key=f"{KEY}_umap"):
            cached_projection(vectors, "umap")
            computed.add(umap_key)
            st.rerun()
    if view.layer == TYPE_LEVEL_LAYER:
        forms_frame, titles = cached_word_forms(vectors, *token_senses(occurrences))
        st.plotly_chart(
            word_form_figure(forms_frame, f"{labels[0]}: one point per word form (type-level)", titles, 620),
            key=f"{KEY}_forms_chart",
            width="stretch",
        )
        st.caption("A type-level layer gives every occurrence of a word form the same vector: one point each.")
        return
    name = layer_label(labels, view.layer, view.mix_name.split(" (")[0])
    if isolated is None:
        coords = cached_projection(vectors, method)
        frame = point_frame(records, occurrences, coords.coords, clustering.labels)
        title = f"{name}: {len(occurrences):,} occurrences"
    else:
        ids = np.asarray(isolated)
        coords = cached_projection(vectors[ids], method if len(ids) >= 3 else "pca")
        frame = point_frame(records, occurrences.iloc[ids], coords.coords, clustering.labels[ids], ids)
        title = f"{name}: {len(ids):,} of {len(occurrences):,}, isolated"
    st.plotly_chart(
        sense_scatter(frame, view.color, title, coords.axis_titles, query, table["occurrence"].tolist(),
                      search=selection.matches, slice_members=selection.slice),
        on_select="rerun",
        selection_mode=("points", "box", "lasso"),
        key=f"{KEY}_chart",
        width="stretch",
    )  # fmt: skip
    st.caption(
        "Click a point to make it the query; draw a box or a lasso (the chart's toolbar) to make a slice. Above "
        f"{FADE_ABOVE:,} points the cloud fades while something is selected, so that the selection stands out."
    )


def render_neighbours(records, occurrences, vectors, query_key: str, query_name):
    st.markdown("**Nearest occurrences** (in the original space) · click a line or a point to choose, hover a "
                "line to find its point")  # fmt: skip
    query = st.selectbox(
        "Occurrence",
        list(range(len(occurrences))),
        format_func=lambda i: occurrence_label(records, occurrences, i),
        key=query_key,
    )
    columns = st.columns([1.4, 1])
    k = columns[0].slider("Neighbours k", 1, 50, key=session.bind(f"{KEY}_neighbours", default=10))
    metric = columns[1].radio(
        "Distance", METRICS, horizontal=True, key=session.bind(f"{KEY}_metric", default=METRICS[0])
    )
    table = neighbour_table(records, occurrences, vectors, query, k, metric)
    query_sense = occurrences["sense"].iloc[query]
    precision = precision_at_k(table, query_sense)
    summary = f"Query #{query}" + (f" · sense **{escape_markdown(query_sense)}**" if query_sense else "")
    chance = chance_precision(occurrences, query)
    if chance is not None:
        share = majority_share(occurrences["sense"].fillna("(none)").tolist())
        score = f"**{precision:.2f}**" if precision is not None else "**not defined (ties)**"
        summary += (
            f" · same-sense precision@{len(table)} = {score} (random other occurrences: {chance:.2f}; majority "
            f"sense {share:.2f})"
        )
    st.markdown(summary)
    ties = tie_note(table)
    if ties:
        st.info(ties)
    neighbour_list(kwic_html(table, query_sense), CHART, f"{KEY}_neighbours_list",
                   partial(session.put, query_name, key=query_key))  # fmt: skip
    st.caption(f"Bars: the {DISTANCE_NAMES[metric]}, on a scale to the farthest occurrence "
               f"({table.attrs['farthest']:.3f}).")  # fmt: skip
    return query, table


def render_slice_scores(occurrences, vectors, view: View, selection: Selection, context) -> None:
    """The slice and the search matches, scored at this layer beside the whole set (LIT's slices)."""
    type_level = view.layer == TYPE_LEVEL_LAYER
    tokens, senses = token_senses(occurrences)
    votes = cached_votes(vectors, senses, tokens, type_level) if selection.slices() else None
    render_slices(KEY, selection, senses, {score_name(type_level): votes}, context)


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


def render_small_multiples(layers, labels, occurrences, records, clustering, view: View, query, table) -> None:
    st.subheader("Every layer side by side")
    tokens, senses = token_senses(occurrences)
    k = len(table)
    figures, rows = [], []
    for score in cached_layer_scores(layers, view.weights, senses, tokens, clustering.labels):
        name = layer_label(labels, score.layer, view.mix_name.split(" (")[0])
        rows.append({"layer": name, "score": score.score_name, "value": score.score, "majority sense": score.majority})
        entry = {"title": f"<b>{name}</b>"}
        if score.layer == TYPE_LEVEL_LAYER:
            entry["word_forms"], entry["axis_titles"] = cached_word_forms(layers[:, 0], tokens, senses)
        else:
            vectors = select_layer(layers, score.layer, view.weights)
            entry["points"] = point_frame(records, occurrences, score.projection.coords, clustering.labels)
            entry["axis_titles"] = score.projection.axis_titles
            entry["selected"], entry["neighbours"] = query, nearest_neighbours(vectors, query, k)["occurrence"].tolist()
        figures.append(entry)
    scores = pd.DataFrame(rows).dropna(axis="columns", how="all")
    st.dataframe(
        scores, hide_index=True, key=f"{KEY}_scores",
        column_config={name: st.column_config.NumberColumn(format="%.2f") for name in ("value", "majority sense")},
    )  # fmt: skip
    st.caption(
        f"In plain words: **{PURITY_K}-NN purity** is how often an occurrence's {PURITY_K} nearest occurrences mostly "
        "share its sense; the **majority sense** share is what always guessing the commonest sense scores, so a "
        "layer is only useful where its purity is clearly above it. **Silhouette** (without gold senses) says how "
        "well separated the clusters are: near 1 apart, near 0 overlapping."
    )
    st.plotly_chart(small_multiples(figures, view.color), key=f"{KEY}_multiples", width="stretch")
    st.caption(
        f"PCA of each layer; the star is the query and the rings its {k} nearest occurrences in that layer. The "
        "type-level layer's score is the best a word form alone can do (each form's majority sense). "
        f"{PURITY_VS_PROBE}"
    )


def render_corpus_neighbours(kind, model, digest, records, occurrences, vectors, view: View, query) -> None:
    st.subheader("Nearest tokens of any word (sentence-level neighbours)")
    sample = indexed_records(records)
    tokens = sum(len(records[i]["tokens"]) for i in sample.indices)
    scope = "the whole corpus" if len(sample.indices) == sample.total else "a sample of the corpus"
    label = f"Search {scope}: {sample.describe('sentences')} ({tokens:,} tokens)"
    if not st.toggle(label, key=session.bind(f"{KEY}_corpus_search", default=False)):
        st.caption(
            f"Embeds every token of the sentences once (at most {MAX_INDEX_TOKENS:,} tokens, drawn across the file), "
            "then ranks them against the query."
        )
        return
    index = token_index(kind, model, digest, records)
    row = occurrences.iloc[query]
    other_words = st.checkbox(
        f"Leave out '{escape_markdown(row['token'])}' itself", key=session.bind(f"{KEY}_other_words", default=False)
    )
    hits = nearest_tokens(
        index, records, vectors[query], view.layer, view.weights, k=10,
        exclude=(int(row["record"]), int(row["position"])), other_words_only=row["token"] if other_words else None,
    )  # fmt: skip
    st.caption(
        f"Query #{query} ({escape_markdown(row['token'])}) against {len(index.record):,} tokens of "
        f"{escape_markdown(sample.describe('sentences'))}"
    )
    st.html(kwic_html(hits))
