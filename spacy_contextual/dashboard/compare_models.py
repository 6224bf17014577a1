"""Compare models: the same word's occurrences under two encoders (e.g. the bundled ELMo and a
fine-tuned one, or ELMo and CoVe), PCA of each with B rotated onto A and both drawn on one scale,
linked by a click that marks the occurrence's neighbours as shared, gained (B only) or lost (A only),
and the occurrences whose nearest neighbours changed most. A word with more than ``MAX_OCCURRENCES``
occurrences is sampled across the file, stratified by sense, and the page says so; the search box marks
its matches in both charts, and a box or lasso on either makes a slice scored under A and B beside the
whole (``selection``); the corpus, word and occurrence are in the URL."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ..analysis.compare import aligned_projections, change_html, neighbour_change, neighbour_sets
from ..analysis.markdown import escape_markdown
from ..analysis.occurrence_store import occurrence_pairs
from ..analysis.occurrence_vectors import layer_options, select_layer
from ..analysis.occurrences import InputError, find_occurrences
from ..analysis.plot_text import escaped
from ..analysis.purity import majority_share
from ..analysis.sampling import draw
from ..analysis.sense_plots import point_frame, sense_scatter, shared_range
from ..analysis.sense_probe import TYPE_LEVEL_LAYER
from ..analysis.slices import gold_senses, occurrence_votes, score_name
from . import session
from .chart_events import clicked_point, follow_click
from .corpus_picker import CORPUS_KEY, corpus_picker, word_picker
from .embedding_progress import occurrence_layers
from .encoder_choice import encoder_or_stop, encoder_picker
from .labels import layer_label, model_label, occurrence_label
from .selection import occurrence_from_url, occurrence_parameter, render_slices, select
from .text_inputs import context_key

KEY = "compare"
MAX_OCCURRENCES = 2000


@st.cache_data(max_entries=16, show_spinner="Comparing the neighbourhoods…")
def cached_comparison(
    vectors_a: np.ndarray, vectors_b: np.ndarray, k: int, senses: tuple, forms: tuple, type_level: tuple,
    _records, _occurrences,
):  # fmt: skip
    """Everything the page draws from the two models' vectors: the change table, the aligned
    projections, each model's k nearest neighbours, and (with gold senses) each model's per-occurrence
    purity votes (``analysis.slices.occurrence_votes``: 5-NN, or the form's majority sense at a type-level layer)."""
    change = neighbour_change(_records, _occurrences, vectors_a, vectors_b, k)
    neighbours = (neighbour_sets(vectors_a, k), neighbour_sets(vectors_b, k))
    votes = tuple(
        occurrence_votes(vectors, senses, forms, flat)
        for vectors, flat in zip((vectors_a, vectors_b), type_level, strict=True)
    )
    return change, aligned_projections(vectors_a, vectors_b), neighbours, votes


def neighbour_marks(nearest_a: list[int], nearest_b: list[int]) -> dict[str, list[int]]:
    """The query's neighbours under A and B as three groups, named with their counts for the legend."""
    shared = [i for i in nearest_a if i in nearest_b]
    gained = [i for i in nearest_b if i not in nearest_a]
    lost = [i for i in nearest_a if i not in nearest_b]
    return {
        f"{len(shared)} shared": shared, f"{len(gained)} gained (B only)": gained, f"{len(lost)} lost (A only)": lost
    }  # fmt: skip


def render() -> None:
    st.title("Compare models")
    st.markdown(
        "The same occurrences under two encoders. Left: PCA of model A; right: PCA of model B, rotated and scaled "
        "onto A's (orthogonal Procrustes), so a point sits in about the same place when both models agree. The "
        "table lists the occurrences whose k nearest neighbours changed most between the models."
    )
    kind_a, model_a = encoder_picker(f"{KEY}_a", "Model A", kind_index=0, shared=False)
    kind_b, model_b = encoder_picker(f"{KEY}_b", "Model B", kind_index=1, shared=False)
    records, digest, source = corpus_picker(KEY)
    word = word_picker(KEY, records, digest, source)
    try:
        occurrences = find_occurrences(records, word)
    except InputError as error:
        st.error(str(error))
        st.stop()
    drawn = draw(occurrences["sense"].where(occurrences["sense"].notna(), None).tolist(), MAX_OCCURRENCES)
    sample_note = drawn.describe("occurrences")
    occurrences = occurrences.iloc[drawn.indices].reset_index(drop=True)
    st.caption(f"{escape_markdown(sample_note)} of **{escape_markdown(word)}**" + (
        f" (at most {MAX_OCCURRENCES:,} are compared)" if len(drawn.indices) < drawn.total else ""
    ))  # fmt: skip
    encoder_a, encoder_b = encoder_or_stop(kind_a, model_a), encoder_or_stop(kind_b, model_b)
    pairs = occurrence_pairs(occurrences)
    layers_a = occurrence_layers(kind_a, model_a, digest, records, pairs, confirm=f"{KEY}_embed_a")
    layers_b = occurrence_layers(kind_b, model_b, digest, records, pairs, confirm=f"{KEY}_embed_b")

    controls = st.columns(2)
    options_a, options_b = layer_options(layers_a.shape[1]), layer_options(layers_b.shape[1])
    layer_a = controls[0].selectbox(
        "Layer of A", options_a, format_func=lambda j: layer_label(encoder_a.layer_labels, j),
        key=session.bind(context_key(f"{KEY}_layer_a", kind_a, model_a), f"{KEY}_layer_a", options_a[-2], options_a),
    )  # fmt: skip
    layer_b = controls[1].selectbox(
        "Layer of B", options_b, format_func=lambda j: layer_label(encoder_b.layer_labels, j),
        key=session.bind(context_key(f"{KEY}_layer_b", kind_b, model_b), f"{KEY}_layer_b", options_b[-2], options_b),
    )  # fmt: skip
    controls = st.columns(2)
    k = controls[0].slider("Neighbours k", 1, 30, key=session.bind(f"{KEY}_k", default=10))
    has_senses = occurrences["sense"].notna().any()
    colors = ["sense", "form"] if has_senses else ["form"]
    color = controls[1].radio("Colour by", colors, horizontal=True,
                              key=session.bind(context_key(f"{KEY}_color", digest, word), default=colors[0],
                                               options=colors))  # fmt: skip
    vectors_a, vectors_b = select_layer(layers_a, layer_a), select_layer(layers_b, layer_b)
    senses = tuple(occurrences["sense"].where(occurrences["sense"].notna(), None))
    forms = tuple(occurrences["token"])
    type_level = (layer_a == TYPE_LEVEL_LAYER, layer_b == TYPE_LEVEL_LAYER)
    change, projections, neighbours, votes = cached_comparison(
        vectors_a, vectors_b, k, senses, forms, type_level, records, occurrences
    )

    context = (kind_a, model_a, kind_b, model_b, digest, word, len(occurrences))
    query_key = context_key(f"{KEY}_query", *context)
    charts = (f"{KEY}_chart_a", f"{KEY}_chart_b")
    for chart in charts:
        clicked = clicked_point(chart)
        follow_click(chart, query_key, None if clicked is None else int(clicked[0]))
    most_changed = int(change["occurrence"].iloc[0])  # where a word nobody chose an occurrence of starts
    query_name = (session.QUERY, digest, word, len(occurrences))
    linked = occurrence_from_url(occurrences)
    if linked is not None:
        session.put(query_name, linked, query_key)
    session.bind(query_key, query_name, most_changed, range(len(occurrences)))
    query = st.selectbox(
        "Occurrence (click a point in either chart)",
        list(range(len(occurrences))),
        format_func=lambda i: occurrence_label(records, occurrences, i),
        key=query_key,
    )
    mean_overlap = float(change["overlap"].mean())
    summary = f"Mean neighbour overlap between A and B: **{mean_overlap:.2f}** (1 = the same {k} neighbours)"
    names = (f"A: {score_name(type_level[0])}", f"B: {score_name(type_level[1])}")
    if gold_senses(senses):
        summary += (
            f" · {names[0]} {votes[0].mean():.2f}, {names[1]} {votes[1].mean():.2f} (majority sense "
            f"{majority_share(list(senses)):.2f})"
        )
    st.markdown(summary)
    if gold_senses(senses):
        st.caption(
            "In plain words: **5-NN purity** is how often an occurrence's 5 nearest occurrences mostly share its "
            "sense; the majority sense share is what always guessing the commonest sense scores. A type-level "
            "layer (one vector per word form) is scored as **word form alone**: each occurrence gets its form's "
            "majority sense, since its nearest neighbours would be a tie among identical vectors."
        )
    if any(type_level):
        st.info("A type-level layer gives every occurrence of a form the same vector: its neighbours, and so the "
                "overlap, are ties broken by position, not what the layer knows.")  # fmt: skip
    selection = select(KEY, occurrences, charts, context)
    marks = neighbour_marks(neighbours[0][query].tolist(), neighbours[1][query].tolist())
    frames = [point_frame(records, occurrences, projection.coords) for projection in projections]
    scale = shared_range(*frames)
    left, right = st.columns(2)
    for column, name, kind, model, encoder, layer, projection, frame in (
        (left, "A", kind_a, model_a, encoder_a, layer_a, projections[0], frames[0]),
        (right, "B", kind_b, model_b, encoder_b, layer_b, projections[1], frames[1]),
    ):
        title = f"{name}: {kind} ({escaped(model_label(model))}), {layer_label(encoder.layer_labels, layer)}"
        with column:
            st.plotly_chart(
                sense_scatter(frame, color, title, projection.axis_titles, query, height=540, marks=marks,
                              axis_range=scale, search=selection.matches, slice_members=selection.slice),
                on_select="rerun",
                selection_mode=("points", "box", "lasso"),
                key=f"{KEY}_chart_{name.lower()}",
                width="stretch",
            )  # fmt: skip
    st.caption(
        f"Both charts on one scale. Marks: the query's {k} nearest occurrences: ○ in both models (shared), ◇ only "
        "in B (gained), × only in A (lost), each drawn where that occurrence lies in the chart's own model."
    )
    render_slices(KEY, selection, senses, dict(zip(names, votes, strict=True)), context)
    st.subheader("Occurrences whose neighbours changed most")
    st.html(change_html(change.head(25)))
    session.mirror({
        "corpus": st.session_state.get(CORPUS_KEY), "word": word,
        "occurrence": occurrence_parameter(occurrences, query), **selection.parameters(),
    })  # fmt: skip
