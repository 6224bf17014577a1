"""The neighbour list linked to its scatter, as the Embedding Projector's inspector has it: the KWIC lines of
``analysis.neighbours.kwic_html`` (every text escaped there) in a Streamlit component whose script hovers
and clicks them. Hovering a line rings its point on the chart (found by the occurrence in the points'
customdata, placed with plotly's own axis scales); clicking a line makes that occurrence the query (a
trigger value, read by ``on_choose`` before the page is drawn again). The script reads the page's chart and
changes nothing of it: the ring is a separate element over it, placed again when the page scrolls and removed
when the pointer leaves the line."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

SCRIPT = """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let box = parentElement.querySelector('.neighbour-list');
  if (!box) {
    box = document.createElement('div');
    box.className = 'neighbour-list';
    parentElement.appendChild(box);
  }
  box.innerHTML = data.html;  // built and escaped by the server: no text of the data is markup here
  let ring = null, hovered = null;
  const unmark = () => { if (ring) { ring.remove(); ring = null; } };
  const mark = (occurrence) => {
    unmark();
    const chart = document.querySelector(data.chart);
    if (!chart || !chart._fullLayout || !chart._fullData) return;
    const xaxis = chart._fullLayout.xaxis, yaxis = chart._fullLayout.yaxis;
    for (const trace of chart._fullData) {
      const points = trace.customdata || [];
      for (let i = 0; i < points.length; i++) {
        if (!points[i] || Number(points[i][0]) !== occurrence) continue;
        const frame = chart.getBoundingClientRect();
        const x = frame.left + xaxis._offset + xaxis.l2p(trace.x[i]);
        const y = frame.top + yaxis._offset + yaxis.l2p(trace.y[i]);
        ring = document.createElement('div');
        ring.className = 'neighbour-hover-mark';
        ring.dataset.occurrence = String(occurrence);
        Object.assign(ring.style, {
          position: 'fixed', left: `${x - 15}px`, top: `${y - 15}px`, width: '30px', height: '30px',
          boxSizing: 'border-box', borderRadius: '50%', border: '3px solid #FF00FF', boxShadow: '0 0 0 2px #FFFFFF',
          pointerEvents: 'none', zIndex: 1000,
        });
        document.body.appendChild(ring);
        return;
      }
    }
  };
  for (const row of box.querySelectorAll('tr[data-occurrence]')) {
    const occurrence = Number(row.dataset.occurrence);
    row.addEventListener('mouseenter', () => { hovered = occurrence; mark(occurrence); });
    row.addEventListener('mouseleave', () => { hovered = null; unmark(); });
    row.addEventListener('click', () => { hovered = null; unmark(); setTriggerValue('chosen', occurrence); });
  }
  const follow = () => { if (hovered !== null) mark(hovered); };  // the page scrolled under the pointer
  window.addEventListener('scroll', follow, true);
  return () => { unmark(); window.removeEventListener('scroll', follow, true); };
}
"""

_component = st.components.v2.component("spacy_contextual_neighbour_list", js=SCRIPT)


def neighbour_list(table_html: str, chart: str, key: str, on_choose: Callable[[int], None]) -> None:
    """Draw the KWIC lines ``table_html`` (rows with ``data-occurrence``) linked to the plotly chart under the
    CSS selector ``chart``; a click on a line calls ``on_choose(occurrence)`` at the start of the next run."""

    def chosen() -> None:
        value = (st.session_state.get(key) or {}).get("chosen")
        if value is not None:
            on_choose(int(value))

    _component(key=key, data={"html": table_html, "chart": chart}, on_chosen_change=chosen)
