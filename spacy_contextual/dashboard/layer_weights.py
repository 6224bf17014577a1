"""Layer weights: the softmax(s_j) and γ every listener of one or more trained pipelines learned, the
layers named per encoder, with the uniform 1/L for reference; the shipped EWT example until a
pipeline is given."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from .. import environment
from ..analysis.layer_weights import example_mixes, layer_weights_figure, listener_mixes, load_pipeline
from ..analysis.occurrences import InputError
from . import session
from .page_setup import setting
from .text_inputs import MAX_PATH_CHARS

KEY = "weights"
MAX_PIPELINES = 6
TABLE_COLUMNS = ["component", "label", "weight", "s", "gamma"]  # narrow enough for an 800 px window


@st.cache_resource(max_entries=8, show_spinner="Loading the pipeline…")
def cached_pipeline(path: str):
    return load_pipeline(path)


def pipeline_label(path: str) -> str:
    """ "elmo_tagger/model-best" for ".../elmo_tagger/model-best": enough to tell pipelines apart."""
    parts = Path(path).resolve().parts
    return "/".join(parts[-2:])


def render() -> None:
    st.title("Layer weights")
    st.markdown(
        "Each component that listens to `elmo` (or `cove`) learns its own mix: ELMo_k = γ · Σ_j softmax(s)_j · h_k,j. "
        "Give one pipeline, or several (one directory a line) to compare their components, e.g. a tagger and a "
        "textcat. "
        "The dashed line is the uniform mix 1/L: bars on it mean the component learned no preference among the layers."
    )
    st.caption(
        "In plain words: **γ** (gamma) is one number per component that scales the whole mix up or down: how loud "
        "the ELMo/CoVe features are next to the component's other inputs, not which layer it prefers."
    )
    limit = MAX_PIPELINES * (MAX_PATH_CHARS + 1)
    linked = session.from_url("pipelines")
    if linked is not None:
        session.put(f"{KEY}_paths", linked[:limit])
    default = "\n".join(map(str, setting(environment.PIPELINE)))
    text = st.text_area(
        "Trained pipeline directories (one a line)", key=session.bind(f"{KEY}_paths", default=default),
        placeholder="e.g. training/elmo_tagger/model-best", height=90, max_chars=limit,
    )  # fmt: skip
    paths = [line.strip() for line in text.splitlines() if line.strip()]
    session.mirror({"pipelines": "\n".join(paths) if text != default else None})
    if not paths:
        render_example()
        return
    if len(paths) > MAX_PIPELINES:
        st.error(f"{len(paths)} pipelines given; compare at most {MAX_PIPELINES} at a time.")
        return
    frames = []
    for path in paths:
        try:
            nlp = cached_pipeline(path)
        except InputError as error:
            st.error(str(error))
            continue
        mixes = listener_mixes(nlp)
        if mixes.empty:
            st.warning(
                f"{path} ({', '.join(nlp.pipe_names) or 'no components'}) has no component with a layer mix: none "
                "listens to an `elmo` or `cove` component. Train one with a spacy-contextual listener (e.g. "
                "configs/elmo_tagger.cfg)."
            )
            continue
        frames.append(mixes.assign(pipeline=pipeline_label(path)))
    if not frames:
        return
    mixes = pd.concat(frames, ignore_index=True)
    if mixes["pipeline"].nunique() > 1:
        mixes["component"] = mixes["pipeline"] + " · " + mixes["component"]
    st.plotly_chart(layer_weights_figure(mixes), key=f"{KEY}_chart", width="stretch")
    st.dataframe(mixes[TABLE_COLUMNS], hide_index=True, key=f"{KEY}_table")


def render_example() -> None:
    """The shipped mixes of a converged EWT run, until the user gives a pipeline."""
    mixes, document = example_mixes()
    about, scores = document.get("about", {}), document.get("scores", {})
    st.info(
        "No pipeline given: showing the **shipped example**, "
        f"{about.get('summary', 'the mixes of a UD English EWT run')}. Enter a pipeline directory above to see "
        "your own."
    )
    st.plotly_chart(layer_weights_figure(mixes), key=f"{KEY}_chart", width="stretch")
    st.dataframe(mixes[TABLE_COLUMNS], hide_index=True, key=f"{KEY}_table")
    with st.expander("How this example was made", expanded=True):
        if about.get("command"):
            st.code(about["command"], language="bash", wrap_lines=True)
        details = {k: v for k, v in about.items() if k not in ("command", "summary")}
        st.markdown("\n".join(f"- **{k}**: {v}" for k, v in details.items()))
        if scores:
            st.markdown("Dev scores of the pipeline: " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
