"""The layer mix each downstream component learned: softmax(s_j) and γ of every ``layer_mix`` node
(``ELMo_k = γ · Σ_j softmax(s)_j · h_{k,j}``) in a trained spaCy pipeline, as a table and as bar
charts, one panel per encoder (its layers named: char-CNN / LSTM-1 / LSTM-2 for ELMo, GloVe / CoVe-1 /
CoVe-2 for CoVe), with the uniform mix 1/L drawn as a reference: bars on that line mean the component
learned no preference.

The package ships one example, the mixes of a converged UD English EWT run
(``assets/layer_weights/``): ``example_mixes`` reads it, ``write_mixes_json`` wrote it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..errors import quoted
from ..layers.layer_mix import layer_weights
from ..locations import ASSETS
from ..text_files import is_dir, read_json
from ..writer import atomic_file
from .chart_layout import chart_layout
from .occurrences import InputError
from .palette import CATEGORY_COLORS
from .plot_text import escaped

MIX_COLUMNS = ["component", "source", "encoder", "layer", "label", "s", "weight", "gamma"]
EXAMPLE = ASSETS / "layer_weights" / "ewt_elmo_tagger.json"
FIRST_LABEL = {"elmo": "char-CNN", "cove": "GloVe"}
LSTM_LABEL = {"elmo": "LSTM-{}", "cove": "CoVe-{}"}


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


def encoder_layer_label(kind: str, layer: int) -> str:
    """The display name of layer ``layer`` of a ``kind`` encoder ("char-CNN", "LSTM-2", "GloVe", "CoVe-1")."""
    if kind not in FIRST_LABEL:
        return f"layer {layer}"
    return FIRST_LABEL[kind] if layer == 0 else LSTM_LABEL[kind].format(layer)


def _encoder_kind(nodes) -> str:
    for node in nodes:
        if node.name == "contextual_listener":
            return node.kind
        if node.name in ("elmo_encoder", "cove_encoder"):
            return node.name.split("_")[0]
    return "unknown"


def listener_mixes(nlp) -> pd.DataFrame:
    """One row per (component, layer): the encoder kind, the layer's index and name among the encoder's
    layers, raw s, softmax(s) and γ. A CoVe component with combine = "concat" mixes CoVe-1 and CoVe-2
    only (GloVe is concatenated), so its layers start at 1. Empty when no component mixes layers."""
    rows = []
    for name, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if model is None:
            continue
        nodes = list(model.walk())
        listeners = [node for node in nodes if node.name == "contextual_listener"]
        source = f"listener → {listeners[0].upstream_name} ({listeners[0].kind})" if listeners else "own encoder"
        kind = _encoder_kind(nodes)
        first = 1 if any(node.name == "static_and_mixed" for node in nodes) else 0
        for node in nodes:
            if node.name != "layer_mix" or not node.has_param("s") or node.get_param("s") is None:
                continue
            mix = layer_weights(node)
            for offset, (s, weight) in enumerate(zip(mix["s"], mix["weights"], strict=True)):
                layer = first + offset
                label = encoder_layer_label(kind, layer)
                rows.append((name, source, kind, layer, label, float(s), float(weight), mix["gamma"]))
    return pd.DataFrame(rows, columns=MIX_COLUMNS)


def write_mixes_json(pipeline: str | Path, out: str | Path, about: dict) -> dict:
    """The mixes of the pipeline at ``pipeline`` as JSON at ``out``: ``{"about": {...}, "scores": the
    pipeline's meta.json performance, "mixes": [one object per row of listener_mixes]}``; ``about``
    records how the pipeline was made (command, data, steps, time)."""
    pipeline = Path(pipeline)
    mixes = listener_mixes(load_pipeline(pipeline))
    if mixes.empty:
        raise InputError(f"{pipeline} has no component with a layer mix: nothing to write")
    meta = read_json(pipeline / "meta.json", "the pipeline is damaged; save it again")
    performance = meta.get("performance") or {}
    scores = {
        k: v for k, v in performance.items() if isinstance(v, (int, float)) and "loss" not in k and "micro" not in k
    }
    document = {"about": about, "scores": scores, "mixes": mixes.to_dict(orient="records")}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(out, reads=[pipeline]) as temporary:
        temporary.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return document


def read_mixes_json(path: str | Path) -> tuple[pd.DataFrame, dict]:
    """(mixes, the rest of the document: about, scores) from a file ``write_mixes_json`` wrote."""
    document = read_json(path, "give a file that write_mixes_json wrote")
    return pd.DataFrame(document["mixes"], columns=MIX_COLUMNS), {k: v for k, v in document.items() if k != "mixes"}


def example_mixes() -> tuple[pd.DataFrame, dict]:
    """The shipped example: the mixes of a converged UD English EWT tagger + morphologizer on the bundled ELMo."""
    return read_mixes_json(EXAMPLE)


def layer_weights_figure(mixes: pd.DataFrame) -> go.Figure:
    """One panel of softmax(s_j) per encoder kind (bars grouped by layer, one colour per component, the
    dashed line at 1/L), and one panel of γ (its labels slanted); the legend below (``chart_layout``)."""
    if mixes.empty:
        raise ValueError("no layer mixes to draw: the pipeline has no listener components")
    kinds = list(dict.fromkeys(mixes["encoder"]))
    titles = [f"softmax(s_j): {kind}" for kind in kinds] + ["γ"]
    widths = [0.8 / len(kinds)] * len(kinds) + [0.2]
    fig = make_subplots(rows=1, cols=len(kinds) + 1, column_widths=widths, subplot_titles=titles)
    palette = CATEGORY_COLORS
    colors = {c: palette[i % len(palette)] for i, c in enumerate(dict.fromkeys(mixes["component"]))}
    shown: set[str] = set()
    for column, kind in enumerate(kinds, start=1):
        of_kind = mixes[mixes["encoder"] == kind]
        for component, group in of_kind.groupby("component", sort=False):
            fig.add_bar(
                x=[escaped(label) for label in group["label"]],
                y=group["weight"],
                name=escaped(component),
                legendgroup=component,
                showlegend=component not in shown,
                text=[f"{w:.3f}" for w in group["weight"]],
                textposition="inside",
                insidetextanchor="end",
                hovertemplate="%{fullData.name} · %{x}: softmax(s) = %{y:.4f}, s = %{customdata:.4f}<extra></extra>",
                customdata=group["s"],
                marker_color=colors[component],
                row=1,
                col=column,
            )
            shown.add(component)
        n_layers = int(of_kind.groupby("component")["layer"].count().max())
        fig.add_hline(
            y=1.0 / n_layers,
            line_dash="dash",
            line_color="#444",
            annotation_text=f"uniform 1/{n_layers} = {1.0 / n_layers:.3f}",
            annotation_position="top left",
            row=1,
            col=column,
        )
        top = min(1.0, max(0.5, 1.3 * float(of_kind["weight"].max())))
        fig.update_yaxes(range=[0, top], title_text="weight" if column == 1 else None, row=1, col=column)
        fig.update_xaxes(tickangle=0, tickfont={"size": 14, "color": "#111"}, row=1, col=column)
    for component, group in mixes.groupby("component", sort=False):
        gamma = group["gamma"].iloc[0]
        fig.add_bar(
            x=[escaped(component)],
            y=[gamma],
            name=escaped(component),
            legendgroup=component,
            showlegend=False,
            text=[f"{gamma:.3f}"],
            textposition="outside",
            hovertemplate="%{fullData.name}: γ = %{y:.4f}<extra></extra>",
            marker_color=colors[component],
            row=1,
            col=len(kinds) + 1,
        )
    # the γ panel is narrow: its component names are slanted so that they never run together
    fig.update_xaxes(tickangle=-40, automargin=True, tickfont={"size": 12, "color": "#111"}, row=1, col=len(kinds) + 1)
    fig.update_layout(barmode="group", **chart_layout(440, legend_title="component"))
    fig.update_layout(margin={"t": 70, "b": 110})  # the panel titles under the toolbar; the slanted γ labels
    return fig
