"""Scatter plots of projected occurrences.

* ``sense_scatter``: one point per occurrence, coloured by gold sense, cluster or word form, the
  sentence (around the word) on hover, the occurrence index as ``customdata`` so that a clicked point
  can be traced back; the selected occurrence (a star) and its k nearest neighbours (rings) drawn on
  top; the axes titled (PCA: with the share of variance).
* ``word_form_frame`` / ``word_form_figure``: a type-level layer (char-CNN, GloVe) gives every
  occurrence of a word form the same vector, so it is drawn as one labelled point per distinct
  vector, sized and labelled by its count, with its senses on hover.
* ``small_multiples``: the same occurrences in every layer and a mix, side by side, each panel titled
  with its sense-purity score.
"""

from __future__ import annotations

import html
from collections import Counter

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .projection import Projection, project

HOVER_CONTEXT = 8  # tokens either side of the word
PALETTE = px.colors.qualitative.D3  # distinct hues (Streamlit's theme uses shades of two)
COLOR_OPTIONS = ("sense", "cluster", "form")
SELECTED_NAME, NEIGHBOURS_NAME = "selected", "nearest neighbours"
AXIS_FONT = {"size": 13, "color": "#222"}


def snippet(tokens: list[str], position: int, context: int = HOVER_CONTEXT) -> str:
    left = html.escape(" ".join(tokens[max(0, position - context) : position]))
    right = html.escape(" ".join(tokens[position + 1 : position + 1 + context]))
    prefix = "… " if position > context else ""
    suffix = " …" if position + 1 + context < len(tokens) else ""
    return f"{prefix}{left} <b>{html.escape(tokens[position])}</b> {right}{suffix}".strip()


def point_frame(
    records: list[dict], occurrences: pd.DataFrame, coords: np.ndarray, clusters: np.ndarray | None = None
) -> pd.DataFrame:
    """What a scatter shows: x, y, occurrence index, cluster, gold sense, word form, hover text."""
    frame = pd.DataFrame(
        {
            "x": coords[:, 0],
            "y": coords[:, 1],
            "occurrence": np.arange(len(occurrences)),
            "sense": occurrences["sense"].fillna("(none)").astype(str).to_numpy(),
            "form": occurrences["token"].astype(str).to_numpy(),
            "context": [
                snippet(records[r]["tokens"], p)
                for r, p in zip(occurrences["record"], occurrences["position"], strict=True)
            ],
        }
    )
    if clusters is not None:
        frame["cluster"] = [f"cluster {c}" for c in clusters]
    return frame


def color_map(values) -> dict[str, str]:
    """One fixed colour per category (sorted), so that every panel colours a sense the same."""
    return {value: PALETTE[i % len(PALETTE)] for i, value in enumerate(sorted(set(values)))}


def _hover(frame: pd.DataFrame) -> list:
    return np.column_stack([frame["occurrence"], frame["context"], frame["sense"], frame["form"]]).tolist()


HOVER = "%{customdata[1]}<br>sense: %{customdata[2]} · form: %{customdata[3]}<extra>#%{customdata[0]}</extra>"


def category_traces(frame: pd.DataFrame, color: str, colors: dict, size: float, opacity: float):
    """One marker trace per value of ``frame[color]`` (WebGL above 1,000 points), hover and customdata set."""
    scatter = go.Scatter if len(frame) <= 1000 else go.Scattergl
    for value, group in frame.groupby(color, sort=True):
        yield scatter(
            x=group["x"],
            y=group["y"],
            mode="markers",
            name=str(value),
            marker={"size": size, "opacity": opacity, "color": colors[value]},
            customdata=_hover(group),
            hovertemplate=HOVER,
        )


def sense_scatter(
    frame: pd.DataFrame,
    color: str = "cluster",
    title: str = "",
    axis_titles: tuple[str, str] = ("", ""),
    selected: int | None = None,
    neighbours=(),
    height: int = 620,
) -> go.Figure:
    """``color``: "sense", "cluster" or "form". WebGL above 1,000 points."""
    if color not in frame.columns:
        raise ValueError(f"cannot colour by '{color}': the frame has {', '.join(frame.columns)}")
    fig = go.Figure(list(category_traces(frame, color, color_map(frame[color]), 8 if len(frame) < 1000 else 4, 0.8)))
    neighbours = list(neighbours)
    if neighbours:
        marker = {"size": 16, "symbol": "circle-open", "line": {"width": 2.5}, "color": "#111"}
        fig.add_trace(_marked(frame.iloc[neighbours], f"{len(neighbours)} {NEIGHBOURS_NAME}", marker))
    if selected is not None:
        marker = {"size": 20, "symbol": "star", "color": "#ffd400", "line": {"width": 1.5, "color": "#111"}}
        fig.add_trace(_marked(frame.iloc[[selected]], f"{SELECTED_NAME} #{selected}", marker))
    fig.update_layout(legend_title_text=color, clickmode="event+select", **_layout(title, axis_titles, height))
    return fig


def _marked(points: pd.DataFrame, name: str, marker: dict) -> go.Scatter:
    """A trace that marks ``points`` (rows of the point frame) above the categories."""
    return go.Scatter(
        x=points["x"], y=points["y"], mode="markers", name=name, marker=marker, customdata=_hover(points),
        hovertemplate=HOVER,
    )  # fmt: skip


def _layout(title: str, axis_titles: tuple[str, str], height: int) -> dict:
    """Title, height, margins and the axes titled in a legible font."""
    return {
        "title": title,
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 50, "b": 10},
        "xaxis": {"title": {"text": axis_titles[0], "font": AXIS_FONT}, "tickfont": AXIS_FONT},
        "yaxis": {"title": {"text": axis_titles[1], "font": AXIS_FONT}, "tickfont": AXIS_FONT},
    }


def word_form_frame(occurrences: pd.DataFrame, static: np.ndarray) -> tuple[pd.DataFrame, tuple[str, str]]:
    """One row per distinct type-level vector: x, y, the word form(s) it stands for, its count, its
    senses, and the first occurrence that has it; and the axis titles."""
    keys, inverse = np.unique(np.asarray(static, dtype=np.float32).round(5), axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    if len(keys) >= 3:
        projection = project(keys, "pca")
    else:  # one or two forms: nothing to project
        coords = np.array([[-1.0, 0.0], [1.0, 0.0]][: len(keys)] if len(keys) == 2 else [[0.0, 0.0]])
        projection = Projection(coords.astype(np.float32), ("", ""))
    rows = []
    for group in range(len(keys)):
        members = np.flatnonzero(inverse == group)
        forms = sorted(set(occurrences["token"].iloc[members]))
        senses = Counter(occurrences["sense"].iloc[members].dropna())
        rows.append(
            {
                "x": projection.coords[group, 0],
                "y": projection.coords[group, 1],
                "form": " / ".join(forms),
                "count": len(members),
                "senses": " · ".join(f"{s} {c:,}" for s, c in senses.most_common()) or "(no gold senses)",
                "sense": senses.most_common(1)[0][0] if senses else "(none)",
                "occurrence": int(members[0]),
            }
        )
    frame = pd.DataFrame(rows).sort_values(["count", "form"], ascending=[False, True], ignore_index=True)
    return frame, projection.axis_titles


def word_form_figure(
    frame: pd.DataFrame, title: str = "", axis_titles: tuple[str, str] = ("", ""), height: int = 420
) -> go.Figure:
    fig = go.Figure(_word_form_trace(frame))
    fig.update_layout(showlegend=False, **_layout(title, axis_titles, height))
    return fig


def _word_form_trace(frame: pd.DataFrame, showlegend: bool = False) -> go.Scatter:
    sizes = 12 + 30 * np.sqrt(frame["count"] / frame["count"].max())
    return go.Scatter(
        x=frame["x"],
        y=frame["y"],
        mode="markers+text",
        text=[f"{form} ×{count:,}" for form, count in zip(frame["form"], frame["count"], strict=True)],
        textposition="top center",
        textfont={"size": 13, "color": "#111"},
        marker={"size": sizes, "color": "#7f7f7f", "opacity": 0.6, "line": {"width": 1, "color": "#333"}},
        customdata=np.column_stack([frame["form"], frame["count"], frame["senses"]]).tolist(),
        hovertemplate="<b>%{customdata[0]}</b> ×%{customdata[1]}<br>%{customdata[2]}<extra>one vector</extra>",
        showlegend=showlegend,
        name="word form",
        cliponaxis=False,
    )


def small_multiples(panels: list[dict], color: str, height: int = 380) -> go.Figure:
    """``panels``: dicts with "title", "axis_titles" and either "points" (a ``point_frame``) or
    "word_forms" (a ``word_form_frame``). Colours are shared by all panels; the legend shows each once."""
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p["title"] for p in panels], horizontal_spacing=0.07)
    colors = color_map(pd.concat([p["points"][color] for p in panels if "points" in p]))
    shown = set()
    for column, panel in enumerate(panels, start=1):
        if "word_forms" in panel:
            fig.add_trace(_word_form_trace(panel["word_forms"]), row=1, col=column)
        else:
            points = panel["points"]
            for trace in category_traces(points, color, colors, 6 if len(points) < 1000 else 3, 0.75):
                trace.update(legendgroup=trace.name, showlegend=trace.name not in shown)
                fig.add_trace(trace, row=1, col=column)
                shown.add(trace.name)
        fig.update_xaxes(title={"text": panel["axis_titles"][0], "font": {"size": 11}}, row=1, col=column)
        fig.update_yaxes(title={"text": panel["axis_titles"][1], "font": {"size": 11}}, row=1, col=column)
    fig.update_annotations(font={"size": 13, "color": "#111"})
    fig.update_layout(
        height=height,
        legend={"orientation": "h", "y": -0.22, "title": {"text": color}},
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    return fig


def silhouette_figure(silhouettes: dict[int, float]) -> go.Figure:
    """Silhouette against k, when k was chosen automatically, with the "no substantial structure" band shaded."""
    ks = sorted(silhouettes)
    fig = go.Figure(go.Scatter(x=ks, y=[silhouettes[k] for k in ks], mode="lines+markers", name="silhouette"))
    fig.add_hrect(y0=min(0.0, *silhouettes.values()), y1=0.25, fillcolor="#f4cccc", opacity=0.4, line_width=0)
    fig.add_annotation(x=ks[0], y=0.24, text="below 0.25: no substantial structure", showarrow=False, xanchor="left")
    fig.update_layout(
        xaxis_title="k", yaxis_title="silhouette", height=260, margin={"l": 10, "r": 10, "t": 10, "b": 10}
    )
    return fig
