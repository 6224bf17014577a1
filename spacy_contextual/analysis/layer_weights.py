"""The layer mix each downstream component learned: softmax(s_j) and γ of every ``layer_mix`` node
(``ELMo_k = γ · Σ_j softmax(s)_j · h_{k,j}``) in a trained spaCy pipeline, as a table and as bar
charts, components side by side."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..errors import quoted
from ..layers.layer_mix import layer_weights
from ..text_files import is_dir
from .occurrences import InputError

MIX_COLUMNS = ["component", "source", "layer", "s", "weight", "gamma"]


def load_pipeline(path: str | Path):
    """``spacy.load`` of a pipeline directory, with a clear error for anything else."""
    import spacy

    path = Path(str(path).strip()).expanduser()
    if not str(path) or not is_dir(path):
        raise InputError(
            f"{quoted(path)} is not a directory: give the directory of a trained spaCy pipeline (e.g. "
            "training/model-best)."
        )
    if not (path / "config.cfg").is_file() or not (path / "meta.json").is_file():
        raise InputError(
            f"{quoted(path)} is not a spaCy pipeline directory (it has no config.cfg and meta.json): give the output "
            "of `spacy train` (model-best or model-last) or of nlp.to_disk()."
        )
    try:
        return spacy.load(path)
    except Exception as error:  # spaCy raises many kinds for a broken pipeline; all are shown to the user
        raise InputError(f"spaCy could not load {quoted(path)}: {type(error).__name__}: {error}") from None


def listener_mixes(nlp) -> pd.DataFrame:
    """One row per (component, layer): raw s, softmax(s) and γ. Empty when no component mixes layers."""
    rows = []
    for name, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if model is None:
            continue
        nodes = list(model.walk())
        listeners = [node for node in nodes if node.name == "contextual_listener"]
        source = f"listener → {listeners[0].upstream_name} ({listeners[0].kind})" if listeners else "own encoder"
        for node in nodes:
            if node.name != "layer_mix" or not node.has_param("s") or node.get_param("s") is None:
                continue
            mix = layer_weights(node)
            for layer, (s, weight) in enumerate(zip(mix["s"], mix["weights"], strict=True)):
                rows.append((name, source, layer, float(s), float(weight), mix["gamma"]))
    return pd.DataFrame(rows, columns=MIX_COLUMNS)


def layer_weights_figure(mixes: pd.DataFrame) -> go.Figure:
    """Left: softmax(s_j) per layer, one bar group per layer, one colour per component. Right: γ."""
    if mixes.empty:
        raise ValueError("no layer mixes to draw: the pipeline has no listener components")
    fig = make_subplots(rows=1, cols=2, column_widths=[0.75, 0.25], subplot_titles=("softmax(s_j) per layer", "γ"))
    palette = px.colors.qualitative.Plotly
    for index, (component, group) in enumerate(mixes.groupby("component", sort=False)):
        color = palette[index % len(palette)]
        fig.add_bar(
            x=[f"layer {j}" for j in group["layer"]],
            y=group["weight"],
            name=component,
            legendgroup=component,
            text=[f"{w:.3f}" for w in group["weight"]],
            hovertemplate=component + " · %{x}: softmax(s) = %{y:.4f}, s = %{customdata:.4f}<extra></extra>",
            customdata=group["s"],
            marker_color=color,
            row=1,
            col=1,
        )
        gamma = group["gamma"].iloc[0]
        fig.add_bar(
            x=[component],
            y=[gamma],
            name=component,
            legendgroup=component,
            showlegend=False,
            text=[f"{gamma:.3f}"],
            hovertemplate=component + ": γ = %{y:.4f}<extra></extra>",
            marker_color=color,
            row=1,
            col=2,
        )
    fig.update_layout(
        barmode="group", height=420, margin={"l": 10, "r": 10, "t": 40, "b": 10}, legend_title_text="component"
    )
    fig.update_yaxes(range=[0, 1], row=1, col=1)
    return fig
