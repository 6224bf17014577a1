"""CoVe attention: an English sentence in; the MT model's German translation (greedy or beam) and
its attention α (target × source) out."""

from __future__ import annotations

import streamlit as st

from ..analysis.attention import attention_figure
from ..errors import ContextualError
from ..models.text import tokenize
from .common import ModelUnavailable, cached_encoder, default_model, path_input

KEY = "attention"
MAX_SOURCE_CHARS = 400
MAX_SOURCE_TOKENS = 60
DEFAULT_SENTENCE = "A man in a blue shirt is playing the guitar on the street."


@st.cache_data(max_entries=64, show_spinner="Translating…")
def cached_translation(model: str, sentence: str, beam: int, max_length: int):
    return cached_encoder("cove", model).translate([sentence], beam=beam, max_length=max_length)[0]


def render() -> None:
    st.title("CoVe attention")
    st.markdown(
        "The MT-LSTM's decoder attends over the English tokens for every German token it writes: α_t = softmax(H (W1 "
        "h_t + b1))."
    )
    with st.sidebar:
        model = path_input(
            "CoVe MT model directory",
            value=default_model("cove"),
            key=f"{KEY}_model",
            help="'default' = the bundled model",
        )
    sentence = st.text_input("English sentence", value=DEFAULT_SENTENCE, key=f"{KEY}_sentence", max_chars=None)
    columns = st.columns(2)
    decoding = columns[0].radio("Decoding", ["greedy", "beam"], horizontal=True, key=f"{KEY}_decoding")
    beam = columns[1].slider("Beam width", 2, 10, 5, key=f"{KEY}_beam") if decoding == "beam" else 1
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
        translated = cached_translation(model, sentence.strip(), beam, max_length=2 * n_tokens + 10)
    except (ModelUnavailable, ContextualError) as error:
        st.error(str(error))
        return
    st.markdown(f"**Translation** ({decoding}{f', beam {beam}' if beam > 1 else ''}): {translated.text or '(empty)'}")
    if not translated.tokens:
        st.warning("The model produced an empty translation, so there is no attention to show.")
        return
    st.plotly_chart(
        attention_figure(translated.source, translated.tokens, translated.attention),
        key=f"{KEY}_chart",
        width="stretch",
    )
    st.caption(
        "Rows: German tokens (</s> left out); columns: English tokens as the model saw them (lowercased). Hover for α."
    )
