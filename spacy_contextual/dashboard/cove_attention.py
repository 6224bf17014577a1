"""CoVe attention: an English sentence in; the MT model's German translation (greedy or beam) and its
attention α (target × source) out, to audit: source coverage (Σ attention per English word, so dropped
words stand out), out-of-vocabulary and <unk> words marked, the model's training domain stated, a
heatmap or a bertviz-style line view, and either view exported as standalone HTML."""

from __future__ import annotations

import streamlit as st

from ..analysis.attention import (
    LOW_COVERAGE,
    attention_figure,
    attention_lines_html,
    low_coverage,
    most_repeated_ngram,
    standalone_html,
    training_domain,
)
from ..errors import ContextualError
from ..formats.bundled import resolve_model_dir
from ..models.text import UNK, detokenize, replace_unknown, tokenize
from .common import ModelUnavailable, cached_encoder, default_model, path_input

KEY = "attention"
MAX_SOURCE_CHARS = 400
MAX_SOURCE_TOKENS = 60
DEFAULT_SENTENCE = "A man in a blue shirt is playing the guitar on the street."
VIEWS = ("heatmap", "lines")


@st.cache_data(max_entries=64, show_spinner="Translating…")
def cached_translation(model: str, sentence: str, beam: int, max_length: int) -> dict:
    """The translation with its attention, which source words are out of the vocabulary and which
    target words the model wrote as <unk> (shown copied from their most-attended source word)."""
    encoder = cached_encoder("cove", model)
    raw = encoder.translate([sentence], beam=beam, max_length=max_length, replace_unk=False)[0]
    return {
        "source": raw.source,
        "tokens": replace_unknown(raw.tokens, raw.attention, raw.source),
        "attention": raw.attention,
        "unknown_source": [j for j, token in enumerate(raw.source) if token not in encoder.vocab.index],
        "unknown_target": [i for i, token in enumerate(raw.tokens) if token == UNK],
    }


def domain_of(model: str) -> str:
    try:
        bundled = resolve_model_dir("cove", "default")
    except FileNotFoundError:
        bundled = None
    try:
        return training_domain(resolve_model_dir("cove", model), bundled)
    except FileNotFoundError:
        return "unknown (the model directory was not found)."


def render() -> None:
    st.title("CoVe attention")
    st.markdown(
        "The MT-LSTM's decoder attends over the English tokens for every German token it writes: α_t = softmax(H (W1 "
        "h_t + b1)). Coverage Σ_t α shows how much attention each English word got over the whole translation."
    )
    with st.sidebar:
        model = path_input(
            "CoVe MT model directory",
            value=default_model("cove"),
            key=f"{KEY}_model",
            help="'default' = the bundled model",
        )
    st.info(f"**Training domain of this model:** {domain_of(model)}")
    sentence = st.text_input("English sentence", value=DEFAULT_SENTENCE, key=f"{KEY}_sentence", max_chars=None)
    columns = st.columns([1, 1, 1])
    decoding = columns[0].radio("Decoding", ["greedy", "beam"], horizontal=True, key=f"{KEY}_decoding")
    beam = columns[1].slider("Beam width", 2, 10, 5, key=f"{KEY}_beam") if decoding == "beam" else 1
    view = columns[2].radio("View", VIEWS, horizontal=True, key=f"{KEY}_view", format_func=str.capitalize)
    if not sentence.strip():
        st.error("The sentence is empty: type an English sentence to translate.")
        return
    if len(sentence) > MAX_SOURCE_CHARS:
        st.error(
            f"The sentence has {len(sentence):,} characters; the limit is {MAX_SOURCE_CHARS}. Translate one sentence "
            "at a time."
        )
        return

    n_tokens = len(tokenize(sentence))
    if n_tokens > MAX_SOURCE_TOKENS:
        st.error(
            f"The sentence has {n_tokens} tokens; the limit is {MAX_SOURCE_TOKENS}. Translate one sentence at a time."
        )
        return
    try:
        result = cached_translation(model, sentence.strip(), beam, max_length=2 * n_tokens + 10)
    except (ModelUnavailable, ContextualError) as error:
        st.error(str(error))
        return
    source, tokens, alpha = result["source"], result["tokens"], result["attention"]
    unknown_source, unknown_target = result["unknown_source"], result["unknown_target"]
    text = detokenize(tokens)
    st.markdown(f"**Translation** ({decoding}{f', beam {beam}' if beam > 1 else ''}): {text or '(empty)'}")
    if not tokens:
        st.warning("The model produced an empty translation, so there is no attention to show.")
        return
    audit(source, tokens, alpha, unknown_source, unknown_target)
    title = f"CoVe attention: {sentence.strip()[:80]}"
    if view == "heatmap":
        figure = attention_figure(source, tokens, alpha, unknown_source, unknown_target)
        st.plotly_chart(figure, key=f"{KEY}_chart", width="stretch")
        st.caption(
            "Top: coverage Σ_t α per English word (red below "
            f"{LOW_COVERAGE}). Rows: German tokens (</s> left out); columns: English tokens as the model saw them "
            "(lowercased). Red, ⚠: out of the vocabulary (read as <unk>) or written as <unk>. Hover for α."
        )
        export = lambda: standalone_html(figure, title)  # noqa: E731  (built on click)
    else:
        page = attention_lines_html(source, tokens, alpha, unknown_source, unknown_target, title, domain_of(model))
        st.iframe(page, height=140 + 26 * max(len(source), len(tokens)))  # every token in it is escaped
        export = page
    st.download_button(
        f"Download this view ({view}) as standalone HTML",
        data=export,
        file_name=f"cove_attention_{view}.html",
        mime="text/html",
        key=f"{KEY}_export",
    )


def audit(source, tokens, alpha, unknown_source, unknown_target) -> None:
    """Warnings a reader of the translation should see before trusting it."""
    if unknown_source:
        words = ", ".join(f"'{source[j]}'" for j in unknown_source)
        st.warning(f"Out of the model's vocabulary (read as <unk>, the zero vector): {words}.")
    if unknown_target:
        st.warning(
            f"The model wrote <unk> {len(unknown_target)} time(s); each is shown as the English word it attended "
            "to most."
        )
    dropped = low_coverage(alpha)
    if dropped:
        words = ", ".join(f"'{source[j]}'" for j in dropped)
        st.warning(f"Little attention (coverage below {LOW_COVERAGE}): {words}; possibly left untranslated.")
    repeated = most_repeated_ngram(tokens)
    if repeated:
        st.warning(
            f"The translation repeats '{repeated[0]}' {repeated[1]} times: a sign that the sentence is far from the "
            "training domain."
        )
