"""Compare models: the same word's occurrences under two encoders (e.g. the bundled ELMo and a
fine-tuned one, or ELMo and CoVe), PCA of each with B rotated onto A and both drawn on one scale,
linked by a click that marks the occurrence's neighbours as shared, gained (B only) or lost (A only),
and the occurrences whose nearest neighbours changed most."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ..analysis.compare import aligned_projections, change_html, neighbour_change, neighbour_sets
from ..analysis.occurrence_store import occurrence_pairs
from ..analysis.occurrence_vectors import layer_options, select_layer
from ..analysis.occurrences import InputError, find_occurrences
from ..analysis.purity import knn_sense_accuracy, majority_share
from ..analysis.sense_plots import point_frame, sense_scatter, shared_range
from . import session
from .common import (
    clicked_point,
    context_key,
    encoder_or_stop,
    encoder_picker,
    follow_click,
    layer_label,
    occurrence_layers,
)
from .corpus_picker import corpus_picker, word_picker

KEY = "compare"
MAX_OCCURRENCES = 2000


@st.cache_data(max_entries=16, show_spinner="Comparing the neighbourhoods…")
def cached_comparison(vectors_a: np.ndarray, vectors_b: np.ndarray, k: int, senses: tuple, _records, _occurrences):
    """Everything the page draws from the two models' vectors: the change table, the aligned
    projections, each model's k nearest neighbours, and (with gold senses) each model's 5-NN sense purity."""
    change = neighbour_change(_records, _occurrences, vectors_a, vectors_b, k)
    neighbours = (neighbour_sets(vectors_a, k), neighbour_sets(vectors_b, k))
    gold = None not in senses and len(set(senses)) > 1
    accuracy = (knn_sense_accuracy(vectors_a, senses), knn_sense_accuracy(vectors_b, senses)) if gold else None
    return change, aligned_projections(vectors_a, vectors_b), neighbours, accuracy


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
        occurrences = find_occurrences(records, word, MAX_OCCURRENCES)
    except InputError as error:
        st.error(str(error))
        st.stop()
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
    change, projections, neighbours, accuracy = cached_comparison(vectors_a, vectors_b, k, senses, records, occurrences)

    query_key = context_key(f"{KEY}_query", kind_a, model_a, kind_b, model_b, digest, word, len(occurrences))
    for chart in (f"{KEY}_chart_a", f"{KEY}_chart_b"):
        clicked = clicked_point(chart)
        follow_click(chart, query_key, None if clicked is None else int(clicked[0]))
    most_changed = int(change["occurrence"].iloc[0])  # where a word nobody chose an occurrence of starts
    session.bind(query_key, (session.QUERY, digest, word, len(occurrences)), most_changed, range(len(occurrences)))
    query = st.selectbox(
        "Occurrence (click a point in either chart)",
        list(range(len(occurrences))),
        format_func=lambda i: f"#{i}: " + occurrences["sentence"].iloc[i][:110],
        key=query_key,
    )
    mean_overlap = float(change["overlap"].mean())
    summary = f"Mean neighbour overlap between A and B: **{mean_overlap:.2f}** (1 = the same {k} neighbours)"
    if accuracy is not None:
        summary += (
            f" · 5-NN sense purity A {accuracy[0]:.2f}, B {accuracy[1]:.2f} (majority sense "
            f"{majority_share(list(senses)):.2f})"
        )
    st.markdown(summary)
    if accuracy is not None:
        st.caption(
            "In plain words: **5-NN purity** is how often an occurrence's 5 nearest occurrences mostly share its "
            "sense; "
            "the majority sense share is what always guessing the commonest sense scores."
        )
    marks = neighbour_marks(neighbours[0][query].tolist(), neighbours[1][query].tolist())
    frames = [point_frame(records, occurrences, projection.coords) for projection in projections]
    scale = shared_range(*frames)
    left, right = st.columns(2)
    for column, name, kind, model, encoder, layer, projection, frame in (
        (left, "A", kind_a, model_a, encoder_a, layer_a, projections[0], frames[0]),
        (right, "B", kind_b, model_b, encoder_b, layer_b, projections[1], frames[1]),
    ):
        title = f"{name}: {kind} ({model}), {layer_label(encoder.layer_labels, layer)}"
        with column:
            st.plotly_chart(
                sense_scatter(frame, color, title, projection.axis_titles, query, height=540, marks=marks,
                              axis_range=scale),
                on_select="rerun",
                selection_mode="points",
                key=f"{KEY}_chart_{name.lower()}",
                width="stretch",
            )  # fmt: skip
    st.caption(
        f"Both charts on one scale. Marks: the query's {k} nearest occurrences: ○ in both models (shared), ◇ only "
        "in B (gained), × only in A (lost), each drawn where that occurrence lies in the chart's own model."
    )
    st.subheader("Occurrences whose neighbours changed most")
    st.html(change_html(change.head(25)))
