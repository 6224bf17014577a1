"""The sense probe per layer (1-NN to sense centroids, stratified 5-fold CV; ``analysis.sense_probe``)
as grouped bars with 95 % bootstrap error bars, one group per word, next to the most-frequent-sense
baseline, with each word's majority-sense share as a dashed line across its group. Layers are named per
encoder, in colour-blind-safe colours; a type-level layer is hatched and its hover says how it is scored
(each form's majority sense: ``sense_probe``). Values are written above each bar's upper whisker (a text
trace in the bar's offset group, ``scattermode="group"``), so that no error bar runs through them. Every
bar carries (word, layer) as ``customdata`` so that a click can open that word and layer elsewhere."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .chart_layout import chart_layout
from .palette import BASELINE_COLOR, CATEGORY_COLORS
from .plot_text import escaped
from .sense_probe import layer_heading

MFS = "MFS baseline"
MAJORITY = "majority-sense share"
TYPE_LEVEL_HOVER = "type-level: one vector per form, scored as each form's majority sense"
CLICK_HINT = "click: open in the Sense explorer"
LABEL_GAP = 0.015  # accuracy units between a whisker's top and its value
LABEL_HEIGHT = 0.055  # accuracy units a value's text takes (11 px of a 500 px chart)
LABEL_HALO = "0 0 3px #fff, 0 0 3px #fff"  # legible on a bar of a neighbouring group
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


def label_heights(group: pd.DataFrame, shares: dict[str, float]) -> list[float]:
    """Where each bar's value goes: above its upper whisker, or above the word's dashed majority line
    where the line would run through the text."""
    heights = []
    for word, top in zip(group["word"], group[["high", "accuracy"]].max(axis=1), strict=True):
        y = top + LABEL_GAP
        share = shares[word]
        heights.append(share + LABEL_GAP if y - LABEL_GAP <= share <= y + LABEL_HEIGHT else y)
    return heights


def probe_figure(results: list[dict]) -> go.Figure:
    frame = probe_frame(results)
    shares = {result["word"]: result["majority_share"] for result in results}
    fig = go.Figure()
    for index, (layer, group) in enumerate(frame.groupby("layer", sort=False)):
        color = BASELINE_COLOR if layer == MFS else CATEGORY_COLORS[index % len(CATEGORY_COLORS)]
        hatched = layer.endswith("(type-level)")
        marker = {"color": color, "line": {"color": "#333", "width": 1}}
        if hatched:  # light hatching on white
            marker["pattern"] = {"shape": "/", "fgcolor": color, "bgcolor": "white", "solidity": 0.35}
        how = f" ({TYPE_LEVEL_HOVER})" if hatched else ""
        words = [escaped(word) for word in group["word"]]
        fig.add_bar(
            x=words,
            y=group["accuracy"],
            name=escaped(layer),
            marker=marker,
            offsetgroup=layer,
            alignmentgroup="layers",
            error_y={
                "type": "data",
                "symmetric": False,
                "array": (group["high"] - group["accuracy"]).clip(lower=0),
                "arrayminus": (group["accuracy"] - group["low"]).clip(lower=0),
                "color": "#222",
                "thickness": 1.2,
            },
            customdata=group[["word", "layer_index"]].to_numpy().tolist(),
            hovertemplate=f"%{{x}} · %{{fullData.name}}{how}: %{{y:.3f}}<extra>{CLICK_HINT}</extra>",
        )
        fig.add_scatter(
            x=words, y=label_heights(group, shares), mode="text",
            text=[f"{a:.2f}" for a in group["accuracy"]], textposition="top center",
            textfont={"color": "#111", "size": 11, "shadow": LABEL_HALO}, offsetgroup=layer, alignmentgroup="layers",
            showlegend=False, legendgroup=layer, hoverinfo="skip", name=f"{escaped(layer)} (value)", cliponaxis=False,
        )  # fmt: skip
    for position, result in enumerate(results):  # the majority share across each word's group of bars
        share = result["majority_share"]
        fig.add_shape(type="line", x0=position - 0.45, x1=position + 0.45, y0=share, y1=share,
                      line={"color": "#000", "width": 2, "dash": "dash"})  # fmt: skip
    fig.add_scatter(x=[None], y=[None], mode="lines", name=MAJORITY, line={"color": "#000", "width": 2, "dash": "dash"})
    fig.update_layout(
        barmode="group",
        scattermode="group",
        yaxis={"title": "accuracy (stratified 5-fold CV, 95 % bootstrap interval)", "range": [0, 1.12]},
        xaxis={"tickfont": {"size": 14, "color": "#111"}},
        clickmode="event+select",
        **chart_layout(500, legend_title="layer"),
    )
    return fig
