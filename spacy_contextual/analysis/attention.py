"""The CoVe decoder's attention α, to audit a translation: one row per target (German) token, one column
per source (English) token, α_t = softmax(H (W1 h_t^dec + b1)) so every row sums to 1.

* ``coverage``: Σ_t α_{t,j}, how much attention source word j received over the whole translation.
* ``row_peak`` (max_j α_{t,j}) and ``row_entropy`` (-Σ_j α_{t,j} log2 α_{t,j}, in bits) say how peaked
  each target row is; ``unattended``: the source words that are no target row's argmax. These are facts
  about attention, not about the translation: attention weights are not alignments, and with rows this
  peaked a word's attention often lands on a neighbour (an article before a noun) while the word
  itself is translated, so low coverage is no evidence of a dropped word.
* Out-of-vocabulary source words (read as ``<unk>``, the zero vector) and target words the model wrote
  as ``<unk>`` (then copied from the most-attended source word) are marked.
* ``attention_figure``: the heatmap under a coverage bar chart, each row's largest weight beside it;
  ``attention_lines_html``: a
  bertviz-style line view (a line from every source word to every target word, its opacity α; hover a
  word to see only its own lines) as one standalone HTML page; ``standalone_html``: any figure as a
  page that works offline (plotly.js inlined).
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..text_files import read_json
from .chart_layout import PLAIN_MARGIN

TICK_FONT = {"size": 15, "color": "#111"}
FLAG_COLOR = "#D55E00"  # Okabe-Ito vermillion: out-of-vocabulary and <unk>
BAR_COLOR = "#0072B2"  # Okabe-Ito blue
UNATTENDED_COLOR = "#E69F00"  # Okabe-Ito orange: no target row's argmax
UNATTENDED_NAME = "no German token attends to it most"
UNATTENDED_MARK_HEIGHT = 0.4  # the mark above its bar (and its value), as a share of the coverage axis
BUNDLED_ATTENTION_CHECK = (  # benchmarks/attention_alignment.py on the bundled model (benchmarks/history/cove.md)
    "On 1,014 Multi30k validation captions, for 1,411 German words from a small list of unambiguous caption nouns "
    "and colours, the most-attended English word was the word being translated 91.9 % of the time, the word next "
    "to it 6.0 %, elsewhere 2.1 %; each row's largest weight is 0.971 on average."
)
NOT_ALIGNMENT = (
    "Attention weights are not alignments: a word can be translated while the attention of its German word "
    "lands on a neighbour (often the article before it)."
)
BUNDLED_DOMAIN = (
    "Multi30k: 29,000 English–German image captions (Flickr30k). Sentences unlike captions (news, dialogue, "
    "technical text) get loose, often repetitive translations."
)


def check_shape(source_tokens: Sequence[str], target_tokens: Sequence[str], alpha: np.ndarray) -> np.ndarray:
    alpha = np.asarray(alpha, dtype=np.float32)
    if alpha.shape != (len(target_tokens), len(source_tokens)):
        raise ValueError(
            f"attention has shape {alpha.shape} but there are {len(target_tokens)} target and "
            f"{len(source_tokens)} source tokens: expected ({len(target_tokens)}, {len(source_tokens)})"
        )
    return alpha


def coverage(alpha: np.ndarray) -> np.ndarray:
    """Σ_t α_{t,j} per source token j."""
    return np.asarray(alpha, dtype=np.float32).sum(axis=0)


def row_peak(alpha: np.ndarray) -> np.ndarray:
    """max_j α_{t,j} per target row t: 1 = all of the row's attention on one source word."""
    return np.asarray(alpha, dtype=np.float32).max(axis=1)


def row_entropy(alpha: np.ndarray) -> np.ndarray:
    """-Σ_j α_{t,j} log2 α_{t,j} per target row t, in bits: 0 = one source word, log2(J) = spread evenly."""
    alpha = np.asarray(alpha, dtype=np.float64)
    logs = np.log2(np.where(alpha > 0, alpha, 1.0))
    return np.maximum(-(alpha * logs).sum(axis=1), 0.0).astype(np.float32)  # no -0.0


def unattended(alpha: np.ndarray) -> list[int]:
    """The source positions that are no target row's argmax (no German token attends to them most)."""
    most = set(np.asarray(alpha).argmax(axis=1).tolist()) if len(alpha) else set()
    return [j for j in range(np.asarray(alpha).shape[1]) if j not in most]


def most_repeated_ngram(tokens: Sequence[str], n: int = 3) -> tuple[str, int] | None:
    """The n-gram the translation repeats most, with its count, when one occurs twice or more."""
    counts = Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    if not counts:
        return None
    ngram, count = counts.most_common(1)[0]
    return (" ".join(ngram), count) if count >= 2 else None


def training_domain(model_dir: Path, bundled_dir: Path | None) -> str:
    """What the model was trained on: the bundled model's data, else ``info.training_data`` of the model's
    config.json, else a note that it is not recorded."""
    if bundled_dir is not None and Path(model_dir).resolve() == Path(bundled_dir).resolve():
        return BUNDLED_DOMAIN
    config = Path(model_dir) / "config.json"
    info = read_json(config, "the model directory is damaged").get("info", {}) if config.is_file() else {}
    data = info.get("training_data") if isinstance(info, dict) else None
    return str(data) if data else "not recorded in this model directory (config.json has no info.training_data)."


def _tick(token: str, flagged: bool, flag: str) -> str:
    text = html.escape(token)
    return f"<span style='color:{FLAG_COLOR}'><b>{text}</b> {flag}</span>" if flagged else text


def attention_figure(
    source_tokens: list[str],
    target_tokens: list[str],
    alpha: np.ndarray,
    unknown_source: Collection[int] = (),
    unknown_target: Collection[int] = (),
) -> go.Figure:
    """Heatmap (data[0]) with the source coverage as bars above it (data[1]) and each target row's
    largest weight as bars beside it (data[2], its entropy on hover and as text); out-of-vocabulary
    source words and ``<unk>`` target words in vermillion, marked ⚠; coverage bars of source words
    that are no row's argmax in orange, with an orange ▼ above each (data[3], ``UNATTENDED_NAME``), visible
    on a bar of height zero."""
    alpha = check_shape(source_tokens, target_tokens, alpha)
    # repeated tokens must stay separate columns/rows: label axes by position, show the words as ticks
    columns = list(range(len(source_tokens)))
    rows = list(range(len(target_tokens)))
    hover = [
        [f"{html.escape(t)} ← {html.escape(s)}: {alpha[i, j]:.3f}" for j, s in enumerate(source_tokens)]
        for i, t in enumerate(target_tokens)
    ]
    covered, peaks, entropies = coverage(alpha), row_peak(alpha), row_entropy(alpha)
    missed = set(unattended(alpha))
    fig = make_subplots(
        rows=2, cols=2, specs=[[{}, None], [{}, {}]], shared_xaxes=True, row_heights=[0.18, 0.82],
        column_widths=[0.85, 0.15], vertical_spacing=0.03, horizontal_spacing=0.02,
    )  # fmt: skip
    fig.add_trace(
        go.Heatmap(
            z=alpha,
            x=columns,
            y=rows,
            text=hover,
            hovertemplate="%{text}<extra></extra>",
            colorscale="Blues",
            zmin=0.0,
            zmax=1.0,
            colorbar={"title": "α", "len": 0.8, "y": 0.4, "x": 1.02},
        ),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=columns,
            y=covered,
            marker_color=[UNATTENDED_COLOR if j in missed else BAR_COLOR for j in columns],
            text=[f"{c:.2f}" for c in covered],
            textposition="outside",
            customdata=source_tokens,
            hovertemplate="%{customdata}: Σ α = %{y:.3f}<extra>coverage</extra>",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=peaks,
            y=rows,
            orientation="h",
            marker_color=BAR_COLOR,
            text=[f"{p:.2f} · {h:.1f} b" for p, h in zip(peaks, entropies, strict=True)],
            textposition="inside",
            insidetextanchor="start",
            textfont={"color": "white", "size": 12},
            customdata=np.column_stack([target_tokens, entropies]).tolist(),
            hovertemplate="%{customdata[0]}: largest α %{x:.3f}, entropy %{customdata[1]:.2f} bits<extra></extra>",
            showlegend=False,
        ),
        row=2,
        col=2,
    )
    top = max(1.2, float(covered.max()) * 1.25)  # the coverage axis
    if missed:  # a mark above each such bar: the bar itself is often too short to show its colour
        marked = sorted(missed)
        fig.add_trace(
            go.Scatter(
                x=marked,
                y=[float(covered[j]) + UNATTENDED_MARK_HEIGHT * top for j in marked],
                mode="markers",
                marker={
                    "symbol": "triangle-down",
                    "size": 13,
                    "color": UNATTENDED_COLOR,
                    "line": {"color": "#111", "width": 1},
                },
                customdata=[source_tokens[j] for j in marked],
                hovertemplate="%{customdata}: no German token attends to it most<extra></extra>",
                name=UNATTENDED_NAME,
                showlegend=False,
                cliponaxis=False,
            ),  # fmt: skip
            row=1,
            col=1,
        )
    cell = 30
    source_ticks = [_tick(s, j in unknown_source, "⚠ OOV") for j, s in enumerate(source_tokens)]
    target_ticks = [_tick(t, i in unknown_target, "⚠ <unk>") for i, t in enumerate(target_tokens)]
    fig.update_xaxes(
        tickmode="array", tickvals=columns, ticktext=source_ticks, tickfont=TICK_FONT, side="bottom", row=2, col=1
    )
    fig.update_xaxes(title={"text": "source (English), as the model read it", "font": TICK_FONT}, row=2, col=1)
    fig.update_yaxes(
        tickmode="array", tickvals=rows, ticktext=target_ticks, tickfont=TICK_FONT, autorange="reversed", row=2, col=1
    )
    fig.update_yaxes(title={"text": "target (German)", "font": TICK_FONT}, row=2, col=1)
    fig.update_yaxes(autorange="reversed", showticklabels=False, matches="y2", row=2, col=2)
    fig.update_xaxes(
        range=[0, 1], title={"text": "largest α · entropy", "font": {"size": 12, "color": "#111"}}, row=2, col=2
    )
    fig.update_yaxes(
        title={"text": "coverage Σα", "font": {"size": 12, "color": "#111"}},
        range=[0, top],
        tickfont={"size": 12, "color": "#111"},
        row=1,
        col=1,
    )
    fig.update_layout(
        height=max(420, 260 + cell * len(target_tokens)),
        margin={"l": 10, "r": 10, "t": PLAIN_MARGIN, "b": 10},  # the coverage bars below the toolbar's row
        plot_bgcolor="white",
    )
    return fig


LINE_SPAN = 240  # px between the English and the German column


def attention_lines_html(
    source_tokens: list[str],
    target_tokens: list[str],
    alpha: np.ndarray,
    unknown_source: Collection[int] = (),
    unknown_target: Collection[int] = (),
    title: str = "",
    note: str = "",
) -> str:
    """The line view as one standalone HTML page (SVG + a few lines of script, nothing loaded from
    elsewhere). English on the left with its coverage bar, German on the right; line opacity = α. The
    drawing is as wide as its longest words need and scales down to a narrower page, so both languages
    stay in view and nothing scrolls."""
    alpha = check_shape(source_tokens, target_tokens, alpha)
    covered, missed = coverage(alpha), set(unattended(alpha))
    row, top, char, bar_x = 26, 20, 9.0, 10  # px: a row, the top margin, a character of 15 px text
    longest_source = max(len(t) + 6 * (j in unknown_source) for j, t in enumerate(source_tokens))  # " ⚠ OOV"
    longest_target = max(len(t) + 8 * (i in unknown_target) for i, t in enumerate(target_tokens))  # " ⚠ <unk>"
    left_x = bar_x + 120 + char * longest_source  # the bar and its value, then the English words (right-aligned)
    right_x = left_x + LINE_SPAN
    drawing_width = int(right_x + char * longest_target + 20)
    height = top + row * max(len(source_tokens), len(target_tokens)) + 20

    def y(i: int) -> int:
        return top + row * i + row // 2

    parts = []
    for t in range(len(target_tokens)):
        for j in range(len(source_tokens)):
            a = float(alpha[t, j])
            parts.append(
                f"<line class='a' x1='{left_x + 8}' y1='{y(j)}' x2='{right_x - 8}' y2='{y(t)}' data-s='{j}' "
                f"data-t='{t}' data-a='{a:.4f}' stroke-opacity='{a:.4f}'><title>{html.escape(target_tokens[t])} ← "
                f"{html.escape(source_tokens[j])}: {a:.3f}</title></line>"
            )
    for j, token in enumerate(source_tokens):
        flagged = j in unknown_source
        low = j in missed
        width = max(3.0, 80 * min(float(covered[j]), 2.0) / 2.0)  # a sliver even at 0, so it can be seen
        fill = UNATTENDED_COLOR if low else BAR_COLOR
        parts.append(
            f"<rect x='{bar_x}' y='{y(j) - 7}' width='{width:.1f}' height='14' fill='{fill}'>"
            f"<title>coverage Σα = {covered[j]:.3f}</title></rect>"
            f"<text x='{bar_x + 86}' y='{y(j) + 5}' class='cov{' low' if low else ''}'>{covered[j]:.2f}</text>"
            f"<text class='tok{' flag' if flagged else ''}' x='{left_x}' y='{y(j) + 5}' text-anchor='end' "
            f"data-side='s' data-i='{j}'>{html.escape(token)}{' ⚠ OOV' if flagged else ''}</text>"
        )
    for t, token in enumerate(target_tokens):
        flagged = t in unknown_target
        parts.append(
            f"<text class='tok{' flag' if flagged else ''}' x='{right_x}' y='{y(t) + 5}' data-side='t' "
            f"data-i='{t}'>{html.escape(token)}{' ⚠ &lt;unk&gt;' if flagged else ''}</text>"
        )
    script = (
        "const lines=[...document.querySelectorAll('line.a')];"
        "function show(side,i){lines.forEach(l=>{l.style.strokeOpacity=(l.dataset[side]===i)?"
        "Math.max(+l.dataset.a,0.04):0;});}"
        "function reset(){lines.forEach(l=>{l.style.strokeOpacity=l.dataset.a;});}"
        "document.querySelectorAll('text.tok').forEach(t=>{"
        "t.addEventListener('mouseenter',()=>show(t.dataset.side,t.dataset.i));"
        "t.addEventListener('mouseleave',reset);});"
    )
    style = (
        "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:8px;color:#111;overflow-x:hidden}"
        "line.a{stroke:#0072B2;stroke-width:2.5}text.tok{font-size:15px;cursor:default;fill:#111}"
        f"text.tok:hover{{font-weight:700}}text.flag{{fill:{FLAG_COLOR};font-weight:700}}"
        f"text.cov{{font-size:11px;fill:#555}}text.low{{fill:#8a5a00;font-weight:700}}"
        "p{font-size:13px;color:#333;margin:4px 0}"
    )
    header = f"<h3 style='margin:0 0 4px 0'>{html.escape(title)}</h3>" if title else ""
    notes = f"<p>{html.escape(note)}</p>" if note else ""
    legend = (
        "<p>Left: English (bar: coverage Σα, orange where no German token attends to it most); right: German. "
        f"Line opacity = α. Hover a word to see only its lines. {html.escape(NOT_ALIGNMENT)}</p>"
    )
    svg = (  # as wide as its words need, narrower windows scale it down: both languages always in view
        f"<svg xmlns='http://www.w3.org/2000/svg' width='100%' style='max-width:{drawing_width}px;height:auto' "
        f"viewBox='0 0 {drawing_width} {height}' preserveAspectRatio='xMinYMin meet'>{''.join(parts)}</svg>"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
        + html.escape(title or "CoVe attention")
        + f"</title><style>{style}</style></head><body>{header}{notes}{legend}{svg}<script>{script}</script>"
        "</body></html>"
    )


def standalone_html(fig: go.Figure, title: str = "") -> str:
    """The figure as a page that opens without a network (plotly.js is inlined, about 4.5 MB)."""
    fig = go.Figure(fig)
    if title:
        fig.update_layout(title=title, margin={"t": 60})
    return fig.to_html(include_plotlyjs=True, full_html=True)
