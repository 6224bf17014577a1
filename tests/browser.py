"""Serving the dashboard in the background and looking at it in headless Chromium (Debian's
``chromium`` + ``chromium-driver``, nothing downloaded): used by the browser test and by
``docs/make_screenshots.py``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from util import free_port

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--use-angle=swiftshader",  # WebGL in software: plotly draws more than 1,000 points with it
    "--enable-unsafe-swiftshader",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHROMEDRIVER = "/usr/bin/chromedriver"


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def served_app(
    script: Path, env: dict | None = None, startup_timeout: float = 90.0
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``streamlit run script`` on 127.0.0.1 at a free port; yields (url, server process) and stops
    exactly that process afterwards."""
    port = free_port()
    command = [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
        "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", "--client.toolbarMode", "minimal",
    ]  # fmt: skip
    with served(command, port, env, startup_timeout) as server:
        yield f"http://127.0.0.1:{port}", server


@contextmanager
def served(
    command: list[str], port: int, env: dict | None = None, startup_timeout: float = 90.0
) -> Iterator[subprocess.Popen]:
    """Run the server ``command`` until the block ends, from the moment 127.0.0.1:``port`` accepts a
    connection; stops exactly that process afterwards."""
    log = tempfile.TemporaryFile()
    server = subprocess.Popen(command, env={**os.environ, **(env or {})}, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if server.poll() is not None:
                log.seek(0)
                raise RuntimeError(
                    f"{command[0]} exited with {server.returncode}:\n{log.read().decode(errors='replace')[-3000:]}"
                )
            try:  # the local server is up once its port accepts a connection (nothing leaves this machine)
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing answered on 127.0.0.1:{port} within {startup_timeout:.0f} s")
            time.sleep(0.3)
        yield server
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@contextmanager
def headless_chromium(width: int = 1500, height: int = 1100):
    """A Selenium driver for Debian's chromium, with a fresh profile directory."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = chromium_binary()
    if binary is None or not Path(CHROMEDRIVER).is_file():
        raise FileNotFoundError("chromium and chromium-driver are needed: apt-get install chromium chromium-driver")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = binary
        for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()


class Page:
    """What a user does on a dashboard page, in Selenium terms; every step waits until Streamlit has
    finished the rerun it starts (its status widget gone, no element left stale), up to ``timeout`` seconds."""

    def __init__(self, driver, url: str, timeout: float = 120.0):
        self.driver, self.url, self.timeout = driver, url, timeout

    def _wait(self, condition, timeout: float | None = None, message: str = ""):
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        wait = WebDriverWait(self.driver, timeout or self.timeout, ignored_exceptions=(StaleElementReferenceException,))
        return wait.until(condition, message)  # an element redrawn by a rerun is looked up again

    def _css(self, selector: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def settle(self, quiet: float = 0.8) -> None:
        """Wait until the app has been idle (no running-status widget, no stale element) for ``quiet`` seconds."""
        deadline = time.monotonic() + self.timeout
        idle_since = None
        while time.monotonic() < deadline:
            running = self._css("[data-testid='stStatusWidget'], [data-testid='stSpinner'], [data-stale='true']")
            if running:
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= quiet:
                return
            time.sleep(0.1)
        raise TimeoutError(f"the app was still running after {self.timeout:.0f} s")

    def open(self, path: str) -> None:
        self.driver.set_window_size(self.driver.get_window_size()["width"], 1000)
        self.driver.get(f"{self.url}/{path}")
        self._wait(lambda d: self._css("[data-testid='stMain'] h1"), message=f"page {path} did not load")
        self.settle()

    def element(self, selector: str):
        """The first element that matches, waiting for it to appear."""
        return self._wait(lambda d: (self._css(selector) or [None])[0], message=f"nothing matched {selector}")

    def wait_for(self, selector: str, timeout_factor: float = 1.0):
        self._wait(lambda d: self._css(selector), self.timeout * timeout_factor, f"nothing matched {selector}")
        self.settle()
        return self._css(selector)

    def wait_for_text(self, text: str, within: str = "body") -> None:
        self._wait(lambda d: any(text in e.text for e in self._css(within)), message=f"no '{text}' in {within}")

    def click_point(self, chart_key: str, index: int) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        self.element(f".st-key-{chart_key} .scatterlayer path.point")
        points = self._css(f".st-key-{chart_key} .scatterlayer path.point")
        ActionChains(self.driver).move_to_element(points[index]).click().perform()
        self.settle()

    def choose_radio(self, key: str, label: str) -> None:
        from selenium.webdriver.common.by import By

        path = f"//*[contains(@class, 'st-key-{key}')]//label[.//p[normalize-space()='{label}']]"
        option = self._wait(lambda d: (d.find_elements(By.XPATH, path) or [None])[0], message=f"no '{label}' in {key}")
        option.click()
        self.settle()

    def toggle(self, key: str) -> None:
        self.element(f".st-key-{key} label").click()
        self.settle()

    def choose_option(self, key: str, text: str) -> None:
        """Open the selectbox ``key`` and pick the first option that contains ``text``."""

        self.element(f".st-key-{key} [role='combobox']").click()
        option = self._wait(
            lambda d: next((o for o in self._css("[role='option']") if text in o.text), None),
            message=f"no option with '{text}' in {key}",
        )
        option.click()
        self.settle()

    def type_text(self, key: str, text: str, area: bool = False) -> None:
        """Replace the text of the input (or text area) ``key`` and submit it as a user would."""
        from selenium.webdriver.common.keys import Keys

        field = self.element(f".st-key-{key} {'textarea' if area else 'input'}")
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(Keys.DELETE)
        field.send_keys(text)
        field.send_keys(Keys.CONTROL, Keys.ENTER) if area else field.send_keys(Keys.ENTER)
        self.settle()

    def lasso(self, chart_key: str, polygon: list[tuple[float, float]]) -> tuple[list, list[int]]:
        """The lasso tool of chart ``chart_key``, then a drag through ``polygon`` (window pixels) and back to its
        start; returns what plotly took (its ``plotly_selected`` event): the lasso in the chart's units and the
        occurrences (``customdata[0]``) it holds."""
        from selenium.webdriver.common.actions.action_builder import ActionBuilder

        self.element(f".st-key-{chart_key} .modebar-btn[data-title='Lasso Select']").click()
        self.driver.execute_script(
            "window.lassoed = null; document.querySelector(arguments[0]).on('plotly_selected', event => {"
            "  window.lassoed = event && [event.lassoPoints, event.points.filter(p => p.customdata)"
            "    .map(p => +p.customdata[0])]; });",
            f".st-key-{chart_key} .js-plotly-plot",
        )
        actions = ActionBuilder(self.driver)
        mouse = actions.pointer_action
        mouse.move_to_location(round(polygon[0][0]), round(polygon[0][1])).pointer_down()
        for (x1, y1), (x2, y2) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
            for step in range(1, 6):  # plotly's lasso is the path of the pointer's moves
                mouse.move_to_location(round(x1 + (x2 - x1) * step / 5), round(y1 + (y2 - y1) * step / 5))
        mouse.pointer_up()
        actions.perform()
        lasso, points = self._wait(lambda d: d.execute_script("return window.lassoed"), message="plotly saw no lasso")
        self.settle()
        return list(zip(lasso["x"], lasso["y"], strict=True)), sorted(set(points))

    def press(self, label: str) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as EC

        self._wait(EC.element_to_be_clickable((By.XPATH, f"//button[contains(., '{label}')]"))).click()
        self.settle()

    def full_screenshot(self, out: Path, max_height: int = 5000, then=None, bottom: str | None = None) -> None:
        """The main area: the window is stretched to the page's height first (to the bottom of the element
        ``bottom`` when given, a CSS selector); ``then()`` runs after the stretch, before the picture."""
        height = self.driver.execute_script(
            "const main = document.querySelector('[data-testid=\"stMain\"]');"
            "const end = arguments[0] && document.querySelector(arguments[0]);"
            "if (end) return end.getBoundingClientRect().bottom + window.scrollY + (main ? main.scrollTop : 0) + 20;"
            "return Math.max(main ? main.scrollHeight : 0, document.body.scrollHeight);",
            bottom,
        )
        self.driver.set_window_size(self.driver.get_window_size()["width"], min(max(int(height) + 40, 800), max_height))
        time.sleep(0.5)  # plotly redraws on resize
        self.settle(0.5)
        if then is not None:
            then()
        self.driver.save_screenshot(str(out))


LAYOUT_PROBLEMS = """
const out = [];
const width = document.documentElement.clientWidth, page = document.documentElement.scrollWidth;
if (page > width + 1) out.push(`the page scrolls sideways (${page} > ${width} px)`);
const name = (el) => {
  const host = el.getRootNode && el.getRootNode().host;  // inside a component's shadow root: name its host
  const keyed = (host || el).closest('[class*="st-key-"]');
  const match = keyed ? keyed.className.match(/st-key-[\\w-]+/) : null;
  return match ? match[0] : (el.dataset && el.dataset.testid) || el.tagName;
};
const roots = [document];  // the page and every open shadow root (components draw into one)
for (const el of document.querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
const all = (selector) => roots.flatMap(root => [...root.querySelectorAll(selector)]);
for (const el of document.querySelectorAll('[data-testid="stElementContainer"]')) {
  const r = el.getBoundingClientRect();
  if (r.width > 0 && (r.right > width + 1 || r.left < -1)) out.push(`${name(el)} runs out of the window`);
}
for (const p of document.querySelectorAll('[data-testid="stRadio"] label p, [data-testid="stWidgetLabel"] p')) {
  const words = p.textContent.trim().split(/\\s+/).length;
  const broken = p.getClientRects().length > words || p.scrollWidth > p.clientWidth + 1;
  if (broken) out.push(`label cut or broken: ${p.textContent}`);
}
for (const p of document.querySelectorAll('[data-testid="stRadio"] [role="radiogroup"] label p')) {
  const line = parseFloat(getComputedStyle(p).lineHeight) || 20;
  if (p.getBoundingClientRect().height > 1.8 * line) out.push(`radio option on two lines: ${p.textContent}`);
}
// today's select box: a react-aria combobox whose value is the text of its input
for (const box of document.querySelectorAll('[data-testid="stSelectbox"] input[role="combobox"]')) {
  if (box.value && box.scrollWidth > box.clientWidth + 1) out.push(`select box cut: ${box.value}`);
}
for (const table of document.querySelectorAll('[data-testid="stDataFrame"]')) {
  const scroller = table.querySelector('.dvn-scroller');
  const cut = scroller && scroller.scrollWidth > scroller.clientWidth + 1;
  if (cut) out.push(`${name(table)} is cut (${scroller.scrollWidth} > ${scroller.clientWidth} px)`);
}
// a word (a run of text without spaces: a number, a sense, a word) of a table cell split across lines
for (const cell of all('td, th')) {
  if (cell.getClientRects().length === 0) continue;
  const walker = (cell.ownerDocument || document).createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.textContent.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (lines.size > 1) out.push(`${name(cell)}: a table cell breaks '${match[0]}' across ${lines.size} lines`);
    }
  }
}
for (const kwic of all('table.kwic')) {
  const column = kwic.parentElement.getBoundingClientRect();
  const wide = kwic.getBoundingClientRect().right > column.right + 1;
  if (wide) out.push(`${name(kwic)}: a KWIC table is wider than its column`);
}
for (const frame of document.querySelectorAll('iframe')) {
  const doc = frame.contentDocument;
  if (!doc || !doc.documentElement || frame.getClientRects().length === 0) continue;
  const root = doc.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) out.push(`${name(frame)}: its page scrolls sideways`);
  if (root.scrollHeight > frame.clientHeight + 1) out.push(`${name(frame)}: its page is cut at the bottom`);
}
const overlap = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left))
  * Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top));
for (const chart of document.querySelectorAll('.js-plotly-plot')) {
  const box = chart.getBoundingClientRect();
  const title = chart.querySelector('.gtitle');
  if (title && title.getBoundingClientRect().top - box.top < 30) out.push(`${name(chart)}: title under the toolbar`);
  const t = title && title.getBoundingClientRect();
  if (t && t.width > 0 && (t.left < box.left - 1 || t.right > box.right + 1)) {
    out.push(`${name(chart)}: its title is cut: ${title.textContent}`);
  }
  const legend = chart.querySelector('.legend'), plot = chart.querySelector('.nsewdrag');
  if (legend && plot && chart._fullLayout.showlegend) {
    const l = legend.getBoundingClientRect(), p = plot.getBoundingClientRect();
    if (l.top < p.bottom - 1) out.push(`${name(chart)}: its legend is not below the plot`);
    const share = Math.round(100 * p.width / box.width);
    const single = chart.querySelectorAll('.nsewdrag').length === 1;
    if (single && share < 75) out.push(`${name(chart)}: the plot takes ${share} % of the chart's width`);
  }
  // no label over another label, an axis title, the legend or an error bar
  const labels = [];
  const add = (el, what) => {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) labels.push([r, what, el]);
  };
  const titles = '.infolayer > g[class^="g-"][class$="title"] text';
  chart.querySelectorAll('.textpoint text, .bartext').forEach(el => add(el, `label '${el.textContent}'`));
  chart.querySelectorAll('.annotation-text-g text').forEach(el => add(el, `annotation '${el.textContent}'`));
  chart.querySelectorAll(titles).forEach(el => add(el, `axis title '${el.textContent}'`));
  if (legend && chart._fullLayout.showlegend) {
    const bg = legend.querySelector('.bg') || legend;
    add(bg, 'the legend');
  }
  const bars = [...chart.querySelectorAll('.errorbar path')].map(el => el.getBoundingClientRect())
    .filter(r => r.height > 0);
  for (let i = 0; i < labels.length; i++) {
    const [a, what] = labels[i];
    for (let j = i + 1; j < labels.length; j++) {
      const [b, other] = labels[j];
      if (labels[i][2].contains(labels[j][2]) || labels[j][2].contains(labels[i][2])) continue;
      if (overlap(a, b) > 4) out.push(`${name(chart)}: ${what} lies over ${other}`);
    }
    const struck = what.startsWith('label') && bars.some(bar => overlap(a, bar) > 2);
    if (struck) out.push(`${name(chart)}: an error bar runs through ${what}`);
  }
}
return out;
"""

SELECTION_PIXEL = """
const chart = document.querySelector(arguments[0]);
chart.scrollIntoView({block: 'center'});
const data = chart._fullData, layout = chart._fullLayout;
const star = data.find(t => (t.name || '').startsWith('selected #'));
if (!star) return null;
const box = chart.getBoundingClientRect();
const x = layout.xaxis._offset + layout.xaxis.l2p(star.x[0]), y = layout.yaxis._offset + layout.yaxis.l2p(star.y[0]);
return [box.left + x, box.top + y];
"""


CHART_POINTS = """
const chart = document.querySelector(arguments[0]);
if (!chart || !chart._fullData || !chart._fullLayout) return null;
const box = chart.getBoundingClientRect(), xaxis = chart._fullLayout.xaxis, yaxis = chart._fullLayout.yaxis;
return chart._fullData.map(trace => [trace.name, (trace.customdata || []).map((data, i) => [
  +data[0], box.left + xaxis._offset + xaxis.l2p(trace.x[i]), box.top + yaxis._offset + yaxis.l2p(trace.y[i]), data[2],
  trace.x[i], trace.y[i],
])]);
"""


def chart_points(driver, chart: str) -> dict[str, list[tuple]]:
    """{trace name: [(occurrence, x, y, sense, data x, data y) per point]} of the scatter under the CSS selector
    ``chart``, x and y in the window's pixels as plotly draws them now, then in the chart's own units."""
    traces = driver.execute_script(CHART_POINTS, chart)
    return {name: [tuple(point) for point in points] for name, points in traces or []}


def shadow_elements(driver, key: str, selector: str) -> list:
    """The elements matching ``selector`` inside the shadow root of the component keyed ``key``."""
    from selenium.webdriver.common.by import By

    host = driver.execute_script(
        "return [...document.querySelectorAll(`.st-key-${arguments[0]} *`)].find(e => e.shadowRoot) || null", key
    )
    return [] if host is None else host.shadow_root.find_elements(By.CSS_SELECTOR, selector)


def layout_problems(driver) -> list[str]:
    """What does not fit the window: the page scrolling sideways, an element out of the window, a label,
    radio option or select box (today's react-aria combobox) cut or broken, a data grid cut, a word or
    number of a table cell (also in a component's shadow root) split across lines, a KWIC table wider than
    its column, an embedded page (the attention lines) that scrolls or is cut, a chart title under the
    toolbar, a legend beside the plot instead of below it, a chart label over another label, an axis title,
    the legend or an error bar."""
    return driver.execute_script(LAYOUT_PROBLEMS)


def selection_colour(driver, chart: str, radius: int = 3) -> list[tuple[int, int, int]]:
    """The screen's colours around the centre of the selected occurrence's star in ``chart`` (a CSS
    selector of the plot): what is drawn on top there."""
    import io

    from PIL import Image

    centre = driver.execute_script(SELECTION_PIXEL, chart)
    if centre is None:
        return []
    time.sleep(0.5)  # scrolled: let WebGL redraw
    image = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
    scale = image.width / driver.execute_script("return window.innerWidth")
    x, y = (round(v * scale) for v in centre)
    return [image.getpixel((x + dx, y + dy)) for dx in range(-radius, radius + 1) for dy in range(-radius, radius + 1)]
