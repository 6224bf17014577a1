"""CoVe attention: an English sentence in; the MT model's German translation (greedy or beam) and its
attention α (target × source) out, to audit: source coverage, how peaked each row is (its largest
weight and entropy), which source words no row attends to most (stated as attention, not as
translation), out-of-vocabulary words and what each <unk> copied, the model's training domain, a
heatmap or a bertviz-style line view, and either view exported as standalone HTML."""

from __future__ import annotations

import streamlit as st

from ..analysis.attention import (
    BUNDLED_ATTENTION_CHECK,
    NOT_ALIGNMENT,
    attention_figure,
    attention_lines_html,
    most_repeated_ngram,
    row_entropy,
    row_peak,
    standalone_html,
    unattended,
)
from ..analysis.markdown import escape_markdown
from ..analysis.model_loading import ModelUnavailable, is_bundled, training_domain_of
from ..analysis.occurrences import InputError
from ..analysis.translation import Translation, translate
from . import session
from .encoder_choice import MODEL_FIELD_HELP, cached_encoder, default_model, show_name_notice
from .text_inputs import path_input

KEY = "attention"
DEFAULT_SENTENCE = "A man in a blue shirt is playing a guitar on the street ."
VIEWS = ("heatmap", "lines")
MAX_SENTENCE_CHARS = 2000  # what a link may carry as the sentence


@st.cache_data(max_entries=64, show_spinner="Translating…")
def cached_translation(model: str, sentence: str, beam: int) -> Translation:
    return translate(cached_encoder("cove", model), sentence, beam)


def render() -> None:
    st.title("CoVe attention")
    st.markdown(
        "The MT-LSTM's decoder attends over the English tokens for every German token it writes: α_t = softmax(H (W1 "
        "h_t + b1)). Coverage Σ_t α shows how much attention each English word got over the whole translation; "
        "beside each row, its largest weight and its entropy show how peaked it is. " + NOT_ALIGNMENT
    )
    with st.sidebar:
        model = path_input(
            "CoVe MT model (name or folder)", key=session.bind(f"{KEY}_model", default=default_model("cove")),
            help=MODEL_FIELD_HELP,
        )  # fmt: skip
    show_name_notice("cove", model)
    linked = {name: session.from_url(name) for name in ("sentence", "decoding", "beam", "view")}
    if linked["sentence"] is not None:
        session.put(session.ATTENTION_SENTENCE, linked["sentence"][:MAX_SENTENCE_CHARS])
    if linked["decoding"] in ("greedy", "beam"):
        session.put(f"{KEY}_decoding", linked["decoding"])
    if (linked["beam"] or "").isdigit() and 2 <= int(linked["beam"]) <= 10:
        session.put(f"{KEY}_beam", int(linked["beam"]))
    if linked["view"] in VIEWS:
        session.put(f"{KEY}_view", linked["view"])
    domain = training_domain_of(model)
    st.info(f"**Training domain of this model:** {escape_markdown(domain)}")
    if is_bundled(model):
        st.caption(f"**How far the bundled model's attention can be read as alignment:** {BUNDLED_ATTENTION_CHECK}")
    sentence = st.text_input(
        "English sentence", key=session.bind(f"{KEY}_sentence", session.ATTENTION_SENTENCE, DEFAULT_SENTENCE)
    )
    columns = st.columns([1, 1, 1])
    decoding = columns[0].radio("Decoding", ["greedy", "beam"], horizontal=True,
                                key=session.bind(f"{KEY}_decoding", default="greedy"))  # fmt: skip
    beam = (
        columns[1].slider("Beam width", 2, 10, key=session.bind(f"{KEY}_beam", default=5)) if decoding == "beam" else 1
    )
    view = columns[2].radio("View", VIEWS, horizontal=True, key=session.bind(f"{KEY}_view", default=VIEWS[0]),
                            format_func=str.capitalize)  # fmt: skip
    session.mirror({
        "sentence": sentence if sentence != DEFAULT_SENTENCE else None, "decoding": decoding if beam > 1 else None,
        "beam": beam if beam > 1 else None, "view": view if view != VIEWS[0] else None,
    })  # fmt: skip
    try:
        result = cached_translation(model, sentence.strip(), beam)
    except (ModelUnavailable, InputError, ValueError) as error:  # ValueError: e.g. an encoder-only CoVe
        st.error(str(error))
        return
    text = escape_markdown(result.text) if result.text else "(empty)"
    st.markdown(f"**Translation** ({decoding}{f', beam {beam}' if beam > 1 else ''}): {text}")
    if not result.tokens:
        st.warning("The model produced an empty translation, so there is no attention to show.")
        return
    audit(result)
    title = f"CoVe attention: {sentence.strip()[:80]}"
    if view == "heatmap":
        figure = attention_figure(
            result.source, result.tokens, result.attention, result.unknown_source, result.unknown_target
        )
        st.plotly_chart(figure, key=f"{KEY}_chart", width="stretch")
        st.caption(
            "Top: coverage Σ_t α per English word (orange: no German token attends to it most). Right: each row's "
            "largest α and its entropy in bits (0 = all attention on one word). Rows: German tokens (</s> left out); "
            "columns: English tokens as the model saw them (lowercased). ⚠: out of the vocabulary (read as <unk>) or "
            "written as <unk>. Hover for α."
        )
        export = lambda: standalone_html(figure, title)  # noqa: E731  (built on click)
    else:
        page = attention_lines_html(
            result.source, result.tokens, result.attention, result.unknown_source, result.unknown_target, title,
            domain,
        )  # fmt: skip
        st.iframe(page, height="content")  # every token in it is escaped; as tall as the drawing, which scales
        export = page
    st.download_button(
        f"Download this view ({view}) as standalone HTML",
        data=export,
        file_name=f"cove_attention_{view}.html",
        mime="text/html",
        key=f"{KEY}_export",
    )


def audit(result: Translation) -> None:
    """What a reader of the translation should know before trusting it or its attention (every word of
    the sentence and the translation escaped: markdown in the input is shown as typed)."""
    source = [escape_markdown(token) for token in result.source]
    if result.unknown_source:
        words = ", ".join(f"'{source[j]}'" for j in result.unknown_source)
        st.warning(f"Out of the model's vocabulary (read as <unk>, the zero vector): {words}.")
    if result.copied:
        st.warning(
            f"The model wrote <unk> {len(result.copied)} time(s); each is replaced by the English word it attended to "
            f"most: {escape_markdown('; '.join(result.copy_notes()))}."
        )
    peaks, entropies = row_peak(result.attention), row_entropy(result.attention)
    st.caption(
        f"Attention rows: largest weight {peaks.mean():.2f} on average (lowest {peaks.min():.2f}), entropy "
        f"{entropies.mean():.2f} bits on average."
    )
    missed = unattended(result.attention)
    if missed:
        words = ", ".join(f"'{source[j]}'" for j in missed)
        st.info(f"No German token attends most to {words}. {NOT_ALIGNMENT}")
    repeated = most_repeated_ngram(result.tokens)
    if repeated:
        st.warning(
            f"The translation repeats '{escape_markdown(repeated[0])}' {repeated[1]} times: a sign that the sentence "
            "is far from the training domain."
        )
