"""The frame every chart shares, so that charts read at any width: the title at the left, at the foot
of a top margin that the toolbar (Streamlit's and plotly's icons, top right) never reaches; the legend
below the plot and its axis title, horizontal (it wraps instead of taking the plot's width, and covers
no point); small side margins.

The legend's offset is a share of the plot's height: ``AXIS_ROOM`` pixels of a plot of ``height - top
- AXIS_ROOM - LEGEND_ROOM`` pixels (plotly then grows the bottom margin to hold the legend)."""

from __future__ import annotations

TITLE_MARGIN = 78  # px above the plot: the toolbar's row (about 36 px), then the title
PLAIN_MARGIN = 40  # px above a plot without a title: the toolbar's row
AXIS_ROOM = 58  # px below the plot for tick labels and the axis title
LEGEND_ROOM = 60  # px the legend takes below that, about two rows


def chart_layout(height: int, title: str = "", legend_title: str = "") -> dict:
    """``fig.update_layout(**chart_layout(...))``: height, title, legend and margins."""
    top = TITLE_MARGIN if title else PLAIN_MARGIN
    plot = max(height - top - AXIS_ROOM - LEGEND_ROOM, 100)
    layout = {
        "height": height,
        "margin": {"l": 10, "r": 10, "t": top, "b": AXIS_ROOM},
        "legend": {
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "y": -AXIS_ROOM / plot,
            "yanchor": "top",
            "title": {"text": legend_title, "side": "left"},
        },
    }
    if title:
        layout["title"] = {"text": title, "x": 0, "xanchor": "left", "xref": "paper", "y": 1, "yref": "paper",
                           "yanchor": "bottom", "pad": {"b": 12}}  # fmt: skip
    return layout
