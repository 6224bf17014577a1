"""The frame every chart shares, so that charts read at any width: the title at the left, at the foot
of a top margin that the toolbar (Streamlit's and plotly's icons, top right) never reaches; the legend
below the plot and its axis title, horizontal (it wraps instead of taking the plot's width, and covers
no point); small side margins.

The legend hangs from the bottom of the whole figure (``yref="container"``), and the bottom margin holds
the axis title and it: plotly pushes the margin up by the legend's height as it wraps into more rows in a
narrower window, so the axis title and the legend never meet. (A legend placed in the plot's own units
would move with the plot's height, which shrinks when the legend wraps: after a resize the axis title
lay over it.)"""

from __future__ import annotations

TITLE_MARGIN = 78  # px above the plot: the toolbar's row (about 36 px), then the title
PLAIN_MARGIN = 40  # px above a plot without a title: the toolbar's row
AXIS_ROOM = 58  # px below the plot for tick labels and the axis title


def chart_layout(height: int, title: str = "", legend_title: str = "") -> dict:
    """``fig.update_layout(**chart_layout(...))``: height, title, legend and margins."""
    top = TITLE_MARGIN if title else PLAIN_MARGIN
    layout = {
        "height": height,
        "margin": {"l": 10, "r": 10, "t": top, "b": AXIS_ROOM},
        "legend": {
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "yref": "container",
            "y": 0,
            "yanchor": "bottom",
            "title": {"text": legend_title, "side": "left"},
        },
    }
    if title:
        layout["title"] = {"text": title, "x": 0, "xanchor": "left", "xref": "paper", "y": 1, "yref": "paper",
                           "yanchor": "bottom", "pad": {"b": 12}}  # fmt: skip
    return layout
