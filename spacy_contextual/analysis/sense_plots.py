"""Scatter plots of projected occurrences: one point per occurrence, coloured by cluster or gold
sense, the sentence (around the word) on hover, the occurrence index as ``customdata`` so that a
clicked point can be traced back."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

HOVER_CONTEXT = 8  # tokens either side of the word


def snippet(tokens: list[str], position: int, context: int = HOVER_CONTEXT) -> str:
    left = html.escape(" ".join(tokens[max(0, position - context) : position]))
    right = html.escape(" ".join(tokens[position + 1 : position + 1 + context]))
    prefix = "… " if position > context else ""
    suffix = " …" if position + 1 + context < len(tokens) else ""
    return f"{prefix}{left} <b>{html.escape(tokens[position])}</b> {right}{suffix}".strip()


def point_frame(
    records: list[dict], occurrences: pd.DataFrame, coords: np.ndarray, clusters: np.ndarray | None = None
) -> pd.DataFrame:
    """What a scatter shows: x, y, occurrence index, cluster, gold sense, hover text."""
    frame = pd.DataFrame(
        {
            "x": coords[:, 0],
            "y": coords[:, 1],
            "occurrence": np.arange(len(occurrences)),
            "sense": occurrences["sense"].fillna("(none)").astype(str).to_numpy(),
            "context": [
                snippet(records[r]["tokens"], p)
                for r, p in zip(occurrences["record"], occurrences["position"], strict=True)
            ],
        }
    )
    if clusters is not None:
        frame["cluster"] = [f"cluster {c}" for c in clusters]
    return frame


def sense_scatter(frame: pd.DataFrame, color: str = "cluster", title: str = "", height: int = 480) -> go.Figure:
    """``color``: "cluster" or "sense". WebGL above 1,000 points (plotly's own switch)."""
    if color not in frame.columns:
        raise ValueError(f"cannot colour by '{color}': the frame has {', '.join(frame.columns)}")
    fig = px.scatter(
        frame,
        x="x",
        y="y",
        color=color,
        category_orders={color: sorted(frame[color].unique())},
        custom_data=["occurrence", "context", "sense"],
        color_discrete_sequence=px.colors.qualitative.D3,  # distinct hues (Streamlit's theme uses shades of two)
        title=title,
        height=height,
    )
    fig.update_traces(
        marker={"size": 7 if len(frame) < 1000 else 4, "opacity": 0.8},
        hovertemplate="%{customdata[1]}<br>sense: %{customdata[2]}<extra>#%{customdata[0]}</extra>",
    )
    fig.update_layout(
        xaxis_title=None, yaxis_title=None, legend_title_text=color, margin={"l": 10, "r": 10, "t": 40, "b": 10}
    )
    return fig


def silhouette_figure(silhouettes: dict[int, float]) -> go.Figure:
    """Silhouette against k, when k was chosen automatically."""
    ks = sorted(silhouettes)
    fig = go.Figure(go.Scatter(x=ks, y=[silhouettes[k] for k in ks], mode="lines+markers"))
    fig.update_layout(
        xaxis_title="k", yaxis_title="silhouette", height=240, margin={"l": 10, "r": 10, "t": 10, "b": 10}
    )
    return fig
