"""Scatter plots of projected occurrences.

Every text that comes from the data (senses, word forms, sentences, cluster names) is HTML-escaped before
plotly sees it, in legend entries, hover text, point labels and tick labels alike (``plot_text.escaped``).

* ``sense_scatter``: one point per occurrence, coloured (Okabe-Ito, colour-blind safe) by gold sense,
  cluster or word form, the sentence (around the word) on hover, the occurrence index as ``customdata``
  so that a clicked or lassoed point can be traced back (a frame may hold some occurrences only: an
  isolated selection, re-projected); the matches of a search marked (black squares), a slice (a lasso or
  box) drawn selected and the rest faded; the selected occurrence (a star) and its k nearest
  neighbours (black rings on a white halo, visible on any colour) drawn above the cloud at any size:
  they are the last traces and of the cloud's own kind (plotly draws every WebGL trace above every SVG
  one, so SVG marks on a WebGL cloud would lie under it), and a cloud of more than ``FADE_ABOVE``
  points fades while something is selected; or the neighbours split into groups (``marks``: shared /
  gained / lost between two models); the axes titled (PCA: with the share of variance) and, when
  given, set to a range shared with another chart; the legend below (``chart_layout``).
* ``word_form_frame`` / ``word_form_figure``: a type-level layer (char-CNN, GloVe) gives every
  occurrence of a word form the same vector, so it is drawn as one labelled point per distinct
  vector, sized and labelled by its count, with its senses on hover; ``label_positions`` puts each
  label where it overlaps no other label or point.
* ``small_multiples``: the same occurrences in every layer and a mix, two panels a row, each titled
  with its layer, the selection and its neighbours in that layer marked in each.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .chart_layout import PLAIN_MARGIN, chart_layout
from .palette import CATEGORY_COLORS, HALO_COLOR, MARK_COLOR, SELECTED_COLOR
from .plot_text import escaped
from .projection import Projection, project

HOVER_CONTEXT = 8  # tokens either side of the word
PALETTE = CATEGORY_COLORS
COLOR_OPTIONS = ("sense", "cluster", "form")
SELECTED_NAME, NEIGHBOURS_NAME, SEARCH_NAME = "selected", "nearest neighbours", "search matches"
AXIS_FONT = {"size": 13, "color": "#222"}
WEBGL_ABOVE = 1000  # points: a cloud this large is drawn with WebGL
FADE_ABOVE = 300  # points: with a selection, a cloud this large fades so that the marks stand out
CLOUD_OPACITY, FADED_OPACITY = 0.8, 0.25


def snippet(tokens: list[str], position: int, context: int = HOVER_CONTEXT) -> str:
    left = html.escape(" ".join(tokens[max(0, position - context) : position]))
    right = html.escape(" ".join(tokens[position + 1 : position + 1 + context]))
    prefix = "… " if position > context else ""
    suffix = " …" if position + 1 + context < len(tokens) else ""
    return f"{prefix}{left} <b>{html.escape(tokens[position])}</b> {right}{suffix}".strip()


def point_frame(
    records: list[dict],
    occurrences: pd.DataFrame,
    coords: np.ndarray,
    clusters: np.ndarray | None = None,
    ids: np.ndarray | None = None,
) -> pd.DataFrame:
    """What a scatter shows: x, y, occurrence index (``ids``: the occurrences' indices when ``occurrences``
    is a part of the whole, default 0..n-1), cluster, gold sense, word form, hover text."""
    frame = pd.DataFrame(
        {
            "x": coords[:, 0],
            "y": coords[:, 1],
            "occurrence": np.arange(len(occurrences)) if ids is None else np.asarray(ids),
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
    return [
        [int(occurrence), context, escaped(sense), escaped(form)]
        for occurrence, context, sense, form in zip(
            frame["occurrence"], frame["context"], frame["sense"], frame["form"], strict=True
        )
    ]


def rows_of(frame: pd.DataFrame, occurrences) -> pd.DataFrame:
    """The rows of ``frame`` for ``occurrences`` (indices into the whole set), in that order, leaving out
    those the frame does not hold."""
    position = pd.Series(np.arange(len(frame)), index=frame["occurrence"].to_numpy())
    return frame.iloc[[int(position[o]) for o in occurrences if o in position.index]]


HOVER = "%{customdata[1]}<br>sense: %{customdata[2]} · form: %{customdata[3]}<extra>#%{customdata[0]}</extra>"


def scatter_kind(points: int):
    """``go.Scattergl`` for a cloud of more than ``WEBGL_ABOVE`` points, else ``go.Scatter``."""
    return go.Scattergl if points > WEBGL_ABOVE else go.Scatter


SLICED_OPACITY = 0.12  # the points outside a slice


def category_traces(
    frame: pd.DataFrame, color: str, colors: dict, size: float, opacity: float, members: set | None = None
):
    """One marker trace per value of ``frame[color]`` (``scatter_kind``), hover and customdata set;
    ``members`` (occurrences of a slice): those drawn selected, the others faded."""
    scatter = scatter_kind(len(frame))
    for value, group in frame.groupby(color, sort=True):
        trace = scatter(
            x=group["x"],
            y=group["y"],
            mode="markers",
            name=escaped(value),
            marker={"size": size, "opacity": opacity, "color": colors[value]},
            customdata=_hover(group),
            hovertemplate=HOVER,
        )
        if members is not None:
            trace.update(
                selectedpoints=[i for i, o in enumerate(group["occurrence"]) if int(o) in members],
                selected={"marker": {"opacity": CLOUD_OPACITY}},
                unselected={"marker": {"opacity": SLICED_OPACITY}},
            )
        yield trace


def sense_scatter(
    frame: pd.DataFrame,
    color: str = "cluster",
    title: str = "",
    axis_titles: tuple[str, str] = ("", ""),
    selected: int | None = None,
    neighbours=(),
    height: int = 620,
    marks: dict[str, list[int]] | None = None,
    axis_range: tuple[list[float], list[float]] | None = None,
    search: Sequence[int] = (),
    slice_members: Sequence[int] | None = None,
) -> go.Figure:
    """``color``: "sense", "cluster" or "form". WebGL above ``WEBGL_ABOVE`` points. ``marks`` ({legend
    name: occurrences}) replaces the one group of ``neighbours``; ``search``: occurrences that match a
    search, marked; ``slice_members``: a slice, drawn selected above the faded rest; ``axis_range`` fixes
    both axes. ``selected``, ``neighbours``, ``marks``, ``search`` and ``slice_members`` are occurrences
    (the frame's "occurrence"): those the frame does not hold are left out."""
    if color not in frame.columns:
        raise ValueError(f"cannot colour by '{color}': the frame has {', '.join(frame.columns)}")
    faded = (selected is not None or len(search) > 0) and len(frame) > FADE_ABOVE
    size = 8 if len(frame) <= WEBGL_ABOVE else 5
    opacity = FADED_OPACITY if faded else CLOUD_OPACITY
    members = None if slice_members is None else {int(o) for o in slice_members}
    fig = go.Figure(list(category_traces(frame, color, color_map(frame[color]), size, opacity, members)))
    scatter = scatter_kind(len(frame))
    if len(search):
        matches = rows_of(frame, search)
        fig.add_traces(mark_traces(matches, f"{len(matches):,} {SEARCH_NAME}", "square-open", 11, scatter))
    groups = marks if marks is not None else {NEIGHBOURS_NAME: list(neighbours)}
    for (name, group), symbol in zip(groups.items(), MARK_SYMBOLS, strict=False):
        shown = rows_of(frame, group)
        if len(shown):  # the neighbours named with how many are drawn (an isolated view may lack some)
            name = f"{len(shown)} {NEIGHBOURS_NAME}" if marks is None else name
            fig.add_traces(mark_traces(shown, name, symbol, 16, scatter))
    star = rows_of(frame, [] if selected is None else [selected])
    if len(star):
        fig.add_trace(selected_trace(star, f"{SELECTED_NAME} #{selected}", 22, scatter))
    fig.update_layout(clickmode="event+select", **_layout(title, axis_titles, height, color))
    if axis_range is not None:
        fig.update_xaxes(range=axis_range[0])
        fig.update_yaxes(range=axis_range[1])
    return fig


MARK_SYMBOLS = ("circle-open", "diamond-open", "x-thin-open")  # neighbours (or shared), gained, lost


def mark_traces(
    points: pd.DataFrame, name: str, symbol: str = "circle-open", size: float = 16, scatter=go.Scatter
) -> list:
    """Marks on ``points`` (rows of a point frame) above the categories: a white halo under a black
    ring, so that they stand out on any colour; the halo is left out of the legend. ``scatter``: the
    cloud's own trace kind (``scatter_kind``), so that the marks are drawn above it."""
    halo = {"size": size, "symbol": symbol, "line": {"width": 5.5, "color": HALO_COLOR}, "color": HALO_COLOR}
    ring = {"size": size, "symbol": symbol, "line": {"width": 2.5, "color": MARK_COLOR}, "color": MARK_COLOR}
    return [
        scatter(x=points["x"], y=points["y"], mode="markers", marker=halo, showlegend=False, hoverinfo="skip",
                legendgroup=name, name=f"{name} (halo)"),
        scatter(x=points["x"], y=points["y"], mode="markers", name=name, marker=ring, legendgroup=name,
                customdata=_hover(points), hovertemplate=HOVER),
    ]  # fmt: skip


def selected_trace(points: pd.DataFrame, name: str, size: float = 20, scatter=go.Scatter):
    """The selected occurrence: a large star in a colour no category has, outlined in black."""
    marker = {"size": size, "symbol": "star", "color": SELECTED_COLOR, "line": {"width": 2, "color": MARK_COLOR}}
    return scatter(
        x=points["x"], y=points["y"], mode="markers", name=name, marker=marker, customdata=_hover(points),
        hovertemplate=HOVER,
    )  # fmt: skip


def shared_range(*frames: pd.DataFrame, pad: float = 0.05) -> tuple[list[float], list[float]]:
    """One (x range, y range) that holds every point of ``frames``: the same scale for charts side by side."""
    xs = np.concatenate([f["x"].to_numpy() for f in frames])
    ys = np.concatenate([f["y"].to_numpy() for f in frames])

    def padded(values: np.ndarray) -> list[float]:
        low, high = float(values.min()), float(values.max())
        margin = (high - low) * pad or 1.0
        return [low - margin, high + margin]

    return padded(xs), padded(ys)


def _layout(title: str, axis_titles: tuple[str, str], height: int, legend_title: str = "") -> dict:
    """``chart_layout`` and the axes titled in a legible font."""
    return {
        **chart_layout(height, title, legend_title),
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
    fig = go.Figure(_word_form_trace(frame, width=NARROWEST_CHART, height=height - 60))
    fig.update_layout(showlegend=False, **_layout(title, axis_titles, height))
    fig.update_xaxes(range=form_range(frame["x"]))
    fig.update_yaxes(range=form_range(frame["y"]))
    return fig


FORM_PAD = 0.12  # share of the span each side of the word-form points: the axes ``label_positions`` assumes


def form_range(values) -> list[float] | None:
    """The axis range of a word-form plot (None for one point: plotly's own)."""
    low, high = float(np.min(values)), float(np.max(values))
    span = high - low
    return [low - FORM_PAD * span, high + FORM_PAD * span] if span > 0 else None


LABEL_FONT_SIZE = 13
# labels are placed for the narrowest plot area a chart gets (an 800 px window): wider, the points only move
# apart sideways, so labels that are clear of each other there stay clear
NARROWEST_CHART, NARROWEST_PANEL = 480, 200
LABEL_POSITIONS = ("top center", "bottom center", "middle right", "middle left", "top right", "top left",
                   "bottom right", "bottom left")  # fmt: skip


def marker_sizes(counts: pd.Series) -> np.ndarray:
    return (12 + 30 * np.sqrt(counts / counts.max())).to_numpy()


def label_positions(
    x: np.ndarray, y: np.ndarray, labels: list[str], sizes: np.ndarray, width: float, height: float
) -> list[str]:
    """A plotly ``textposition`` for each label such that no label box overlaps another label or a
    marker or leaves the plot area of about ``width`` × ``height`` pixels (labels in order of importance,
    the first placed first; where nothing is free, the position that overlaps least)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)

    def scaled(values: np.ndarray, pixels: float) -> np.ndarray:  # as ``form_range`` sets the axis
        span = values.max() - values.min()
        if span <= 0:
            return np.full(len(values), pixels / 2)
        return (values - values.min() + FORM_PAD * span) / ((1 + 2 * FORM_PAD) * span) * pixels

    px_x, px_y = scaled(x, width), scaled(y, height)  # y grows upwards
    char, line = 0.62 * LABEL_FONT_SIZE, 1.3 * LABEL_FONT_SIZE
    markers = [(cx - r, cy - r, cx + r, cy + r) for cx, cy, r in zip(px_x, px_y, np.asarray(sizes) / 2, strict=True)]

    def box(i: int, position: str) -> tuple[float, float, float, float]:
        w, r = char * len(labels[i]), sizes[i] / 2
        vertical, horizontal = position.split(" ")
        cy = {"top": px_y[i] + r + line / 2, "bottom": px_y[i] - r - line / 2, "middle": px_y[i]}[vertical]
        cx = {"center": px_x[i], "right": px_x[i] + r + w / 2, "left": px_x[i] - r - w / 2}[horizontal]
        return cx - w / 2, cy - line / 2, cx + w / 2, cy + line / 2

    def overlap(a, b) -> float:
        return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))

    def outside(a) -> float:  # the part of a box beyond the plot area
        return (a[2] - a[0]) * (a[3] - a[1]) - overlap(a, (0.0, 0.0, width, height))

    placed: list[tuple[float, float, float, float]] = []
    positions = []
    for i in range(len(labels)):
        others = [m for j, m in enumerate(markers) if j != i]
        cost = {
            p: sum(overlap(box(i, p), other) for other in [*placed, *others]) + outside(box(i, p))
            for p in LABEL_POSITIONS
        }
        best = min(LABEL_POSITIONS, key=lambda p: (cost[p], LABEL_POSITIONS.index(p)))
        positions.append(best)
        placed.append(box(i, best))
    return positions


def _word_form_trace(
    frame: pd.DataFrame, showlegend: bool = False, width: float = 600, height: float = 360, clip: bool = False
):
    """``clip``: labels cut at the plot area's edge (a panel among others), where they could reach a neighbour."""
    sizes = marker_sizes(frame["count"])
    labels = [f"{form} ×{count:,}" for form, count in zip(frame["form"], frame["count"], strict=True)]
    return go.Scatter(
        x=frame["x"],
        y=frame["y"],
        mode="markers+text",
        text=[escaped(label) for label in labels],
        textposition=label_positions(frame["x"], frame["y"], labels, sizes, width, height),
        textfont={"size": LABEL_FONT_SIZE, "color": "#111"},
        marker={"size": sizes, "color": "#7f7f7f", "opacity": 0.6, "line": {"width": 1, "color": "#333"}},
        customdata=[
            [escaped(form), count, escaped(senses)]
            for form, count, senses in zip(frame["form"], frame["count"], frame["senses"], strict=True)
        ],
        hovertemplate="<b>%{customdata[0]}</b> ×%{customdata[1]}<br>%{customdata[2]}<extra>one vector</extra>",
        showlegend=showlegend,
        name="word form",
        cliponaxis=clip,
    )


MULTIPLES_COLUMNS = 2  # panels a row: each keeps half the width, even in an 800 px window
PANEL_HEIGHT = 300  # px a row of panels


def small_multiples(panels: list[dict], color: str) -> go.Figure:
    """``panels``: dicts with "title", "axis_titles" and either "points" (a ``point_frame``) or
    "word_forms" (a ``word_form_frame``), and optionally "selected" (an occurrence) and "neighbours"
    (its nearest occurrences in that panel's layer), marked as in ``sense_scatter``; ``MULTIPLES_COLUMNS``
    panels a row. Colours are shared by all panels; the legend (below) shows each once."""
    columns = min(MULTIPLES_COLUMNS, len(panels))
    rows = -(-len(panels) // columns)
    fig = make_subplots(
        rows=rows, cols=columns, subplot_titles=[p["title"] for p in panels], horizontal_spacing=0.1,
        vertical_spacing=0.5 / rows,
    )  # fmt: skip
    colors = color_map(pd.concat([p["points"][color] for p in panels if "points" in p]))
    shown = set()
    for number, panel in enumerate(panels):
        cell = {"row": number // columns + 1, "col": number % columns + 1}
        if "word_forms" in panel:
            fig.add_trace(
                _word_form_trace(panel["word_forms"], width=NARROWEST_PANEL, height=PANEL_HEIGHT - 80, clip=True),
                **cell,
            )
        else:
            points = panel["points"]
            selected = panel.get("selected")
            faded = selected is not None and len(points) > FADE_ABOVE
            size = 6 if len(points) <= WEBGL_ABOVE else 3
            traces = list(category_traces(points, color, colors, size, FADED_OPACITY if faded else 0.75))
            scatter = scatter_kind(len(points))
            neighbours = list(panel.get("neighbours", ()))
            if neighbours:
                name = f"{NEIGHBOURS_NAME} (each layer's own)"
                traces += mark_traces(rows_of(points, neighbours), name, size=11, scatter=scatter)
            if selected is not None:
                traces.append(selected_trace(rows_of(points, [selected]), SELECTED_NAME, 15, scatter))
            for trace in traces:
                legend = trace.showlegend is not False and trace.name not in shown
                trace.update(legendgroup=trace.legendgroup or trace.name, showlegend=legend)
                fig.add_trace(trace, **cell)
                shown.add(trace.name)
        fig.update_xaxes(title={"text": panel["axis_titles"][0], "font": {"size": 11}}, **cell)
        fig.update_yaxes(title={"text": panel["axis_titles"][1], "font": {"size": 11}}, **cell)
    fig.update_annotations(font={"size": 13, "color": "#111"})
    fig.update_layout(**chart_layout(PANEL_HEIGHT * rows + 120, legend_title=color))
    fig.update_layout(margin={"t": 70})  # the first row's titles, under the toolbar's row
    return fig


def silhouette_figure(silhouettes: dict[int, float]) -> go.Figure:
    """Silhouette against k, when k was chosen automatically, with the "no substantial structure" band shaded."""
    ks = sorted(silhouettes)
    fig = go.Figure(go.Scatter(x=ks, y=[silhouettes[k] for k in ks], mode="lines+markers", name="silhouette"))
    fig.add_hrect(y0=min(0.0, *silhouettes.values()), y1=0.25, fillcolor="#f4cccc", opacity=0.4, line_width=0)
    fig.add_annotation(x=ks[0], y=0.24, text="below 0.25: no substantial structure", showarrow=False, xanchor="left")
    fig.update_layout(
        xaxis_title="k", yaxis_title="silhouette", height=280, margin={"l": 10, "r": 10, "t": PLAIN_MARGIN, "b": 10}
    )
    return fig
