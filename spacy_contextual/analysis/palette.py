"""The colours of every chart: Okabe & Ito's colour-blind-safe palette (distinct under the common
colour-vision deficiencies), and marks that stand out on any of them (black rings with a white halo)."""

from __future__ import annotations

OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
CATEGORY_COLORS = OKABE_ITO[:7] + ["#999999"]  # categories; black is kept for the marks
BASELINE_COLOR = "#BBBBBB"
MARK_COLOR, HALO_COLOR = "#000000", "#FFFFFF"
SELECTED_COLOR = "#FF00FF"  # the selected occurrence: magenta, a colour that no category has


def text_color(background: str) -> str:
    """Black or white, whichever reads better on ``background`` ("#RRGGBB"), by relative luminance."""
    red, green, blue = (int(background[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return "#000000" if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.45 else "#FFFFFF"
