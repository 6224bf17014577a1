"""The sense probe per layer (1-NN to sense centroids, 5-fold CV; ``analysis.sense_probe``) as
grouped bars, one group per word, next to the most-frequent-sense baseline."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go


def probe_frame(results: list[dict]) -> pd.DataFrame:
    """Long form: word, layer ("layer j" or "MFS baseline"), accuracy, instances, senses."""
    rows = []
    for result in results:
        common = {"word": result["word"], "instances": result["instances"], "senses": result["senses"]}
        for layer, accuracy in enumerate(result["layer_accuracy"]):
            rows.append({**common, "layer": f"layer {layer}", "accuracy": float(accuracy)})
        rows.append({**common, "layer": "MFS baseline", "accuracy": float(result["mfs_accuracy"])})
    return pd.DataFrame(rows, columns=["word", "layer", "accuracy", "instances", "senses"])


def probe_figure(results: list[dict]) -> go.Figure:
    frame = probe_frame(results)
    fig = go.Figure()
    palette = px.colors.qualitative.D3
    for index, (layer, group) in enumerate(frame.groupby("layer", sort=False)):
        is_baseline = layer == "MFS baseline"
        fig.add_bar(
            x=group["word"],
            y=group["accuracy"],
            name=layer,
            text=[f"{a:.3f}" for a in group["accuracy"]],
            marker={"color": "lightgray", "line": {"color": "black", "width": 1}}
            if is_baseline
            else {"color": palette[index % len(palette)]},
            hovertemplate="%{x} · " + layer + ": %{y:.3f}<extra></extra>",
        )
    fig.update_layout(
        barmode="group",
        yaxis={"title": "accuracy (5-fold CV)", "range": [0, 1]},
        height=420,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return fig
