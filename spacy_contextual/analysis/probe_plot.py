"""The sense probe per layer (1-NN to sense centroids, stratified 5-fold CV; ``analysis.sense_probe``)
as grouped bars with 95 % bootstrap error bars, one group per word, next to the most-frequent-sense
baseline, with each word's majority-sense share as a dashed line across its group. Layers are named per
encoder, in colour-blind-safe colours; the type-level layer 0 is hatched. Values are written at the
foot of each bar (clear of the error bars), in black or white as the bar needs. Every bar carries
(word, layer) as ``customdata`` so that a click can open that word and layer elsewhere."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .chart_layout import chart_layout
from .palette import BASELINE_COLOR, CATEGORY_COLORS, text_color
from .sense_probe import layer_heading

MFS = "MFS baseline"
MAJORITY = "majority-sense share"
FRAME_COLUMNS = ["word", "layer", "layer_index", "accuracy", "low", "high", "instances", "available", "senses"]


def probe_frame(results: list[dict]) -> pd.DataFrame:
    """Long form: word, layer (its name, or "MFS baseline"), layer_index (-1 for the baseline),
    accuracy with its 95 % interval (low, high), instances (probed), available (before sampling), senses."""
    rows = []
    for result in results:
        common = {
            "word": result["word"],
            "instances": result["instances"],
            "available": result.get("available", result["instances"]),
            "senses": result["senses"],
        }
        for layer, (accuracy, (low, high)) in enumerate(
            zip(result["layer_accuracy"], result["layer_interval"], strict=True)
        ):
            rows.append({**common, "layer": layer_heading(result, layer), "layer_index": layer,
                         "accuracy": float(accuracy), "low": low, "high": high})  # fmt: skip
        low, high = result["mfs_interval"]
        rows.append({**common, "layer": MFS, "layer_index": -1, "accuracy": float(result["mfs_accuracy"]),
                     "low": low, "high": high})  # fmt: skip
    return pd.DataFrame(rows, columns=FRAME_COLUMNS)


def probe_figure(results: list[dict]) -> go.Figure:
    frame = probe_frame(results)
    fig = go.Figure()
    for index, (layer, group) in enumerate(frame.groupby("layer", sort=False)):
        color = BASELINE_COLOR if layer == MFS else CATEGORY_COLORS[index % len(CATEGORY_COLORS)]
        hatched = layer.endswith("(type-level)")
        marker = {"color": color, "line": {"color": "#333", "width": 1}}
        if hatched:  # light hatching on white, so that the value stays legible
            marker["pattern"] = {"shape": "/", "fgcolor": color, "bgcolor": "white", "solidity": 0.35}
        fig.add_bar(
            x=group["word"],
            y=group["accuracy"],
            name=layer,
            text=[f"{a:.2f}" for a in group["accuracy"]],
            textposition="inside",
            insidetextanchor="start",
            textangle=-90,
            textfont={"color": "#000000" if hatched else text_color(color), "size": 12},
            marker=marker,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": (group["high"] - group["accuracy"]).clip(lower=0),
                "arrayminus": (group["accuracy"] - group["low"]).clip(lower=0),
                "color": "#222",
                "thickness": 1.2,
            },
            customdata=group[["word", "layer_index"]].to_numpy().tolist(),
            hovertemplate="%{x} · " + layer + ": %{y:.3f}<extra>click: open in the Sense explorer</extra>",
        )
    for position, result in enumerate(results):  # the majority share across each word's group of bars
        share = result["majority_share"]
        fig.add_shape(type="line", x0=position - 0.45, x1=position + 0.45, y0=share, y1=share,
                      line={"color": "#000", "width": 2, "dash": "dash"})  # fmt: skip
    fig.add_scatter(x=[None], y=[None], mode="lines", name=MAJORITY, line={"color": "#000", "width": 2, "dash": "dash"})
    fig.update_layout(
        barmode="group",
        yaxis={"title": "accuracy (stratified 5-fold CV, 95 % bootstrap interval)", "range": [0, 1.05]},
        xaxis={"tickfont": {"size": 14, "color": "#111"}},
        clickmode="event+select",
        **chart_layout(500, legend_title="layer"),
    )
    return fig
