"""The CoVe decoder's attention α as a heatmap: one row per target (German) token, one column per
source (English) token, α_t = softmax(H (W1 h_t^dec + b1)) so every row sums to 1."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go


def attention_figure(source_tokens: list[str], target_tokens: list[str], alpha: np.ndarray) -> go.Figure:
    alpha = np.asarray(alpha, dtype=np.float32)
    if alpha.shape != (len(target_tokens), len(source_tokens)):
        raise ValueError(
            f"attention has shape {alpha.shape} but there are {len(target_tokens)} target and "
            f"{len(source_tokens)} source tokens: expected ({len(target_tokens)}, {len(source_tokens)})"
        )
    # repeated tokens must stay separate columns/rows: label axes by position, show the words as ticks
    columns = list(range(len(source_tokens)))
    rows = list(range(len(target_tokens)))
    hover = [
        [f"{html.escape(t)} ← {html.escape(s)}: {alpha[i, j]:.3f}" for j, s in enumerate(source_tokens)]
        for i, t in enumerate(target_tokens)
    ]
    fig = go.Figure(
        go.Heatmap(
            z=alpha,
            x=columns,
            y=rows,
            text=hover,
            hovertemplate="%{text}<extra></extra>",
            colorscale="Blues",
            zmin=0.0,
            zmax=1.0,
            colorbar={"title": "α"},
        )
    )
    cell = 28
    fig.update_layout(
        xaxis={
            "title": "source (English)",
            "tickmode": "array",
            "tickvals": columns,
            "ticktext": source_tokens,
            "side": "top",
        },
        yaxis={
            "title": "target (German)",
            "tickmode": "array",
            "tickvals": rows,
            "ticktext": target_tokens,
            "autorange": "reversed",
        },
        height=max(300, 120 + cell * len(target_tokens)),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig
