"""Screenshots of every dashboard page for the README, taken in headless Chromium.

Serves ``app/Home.py`` on 127.0.0.1, opens each page, does what a user would (types a word, clicks a
point, presses a button), waits for what must be drawn (never a fixed sleep alone) and saves
``docs/dashboard_<name>.png`` in a 1280 px window and, for the main pages, ``docs/dashboard_<name>_800.png``
in an 800 px one, each reduced to 256 colours (a few hundred KB at most). Each page is checked as it is
saved (``browser.layout_problems``: nothing runs out of the window, no label, option, select box or table is
cut or breaks a word, titles clear of the toolbar, legends below the plots, no label over another); the
script lists what it found and exits with status 1 if anything.

    PYTHONPATH=tests python docs/make_screenshots.py [--elmo-model DIR] [--cove-model DIR] [--pipeline DIR]
        [--sense-data DIR]

Without options the app's own defaults apply: the bundled models, the shipped layer-weights example,
and the sense-labelled files the app finds beside a source checkout (../shared/data/senses).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from spacy_contextual.dashboard.environment_names import COVE_MODEL_ENV, ELMO_MODEL_ENV, PIPELINE_ENV, SENSE_DATA_ENV

try:
    import browser  # tests/browser.py, the browser harness the tests use (not part of the package)
except ModuleNotFoundError as missing:
    if missing.name not in ("browser", "util"):
        raise
    sys.exit(
        "docs/make_screenshots.py uses the tests' browser harness (tests/browser.py): "
        "run it as PYTHONPATH=tests python docs/make_screenshots.py"
    )

ROOT = Path(__file__).resolve().parents[1]

DOCS = ROOT / "docs"
WIDTHS = (1280, 800)
NARROW = {"home", "sense_explorer", "sense_explorer_hard", "layer_probe", "compare_models", "cove_attention",
          "layer_weights", "sense_explorer_projector", "cove_attention_lines"}  # fmt: skip  # also at 800 px
EXPLORER_CHART = ".st-key-sense_chart .js-plotly-plot"


def demo_explorer(page: browser.Page) -> None:
    """The demo sentences, 'play': a point clicked, its neighbours marked; sentence-level neighbours on."""
    page.open("Sense_explorer")
    page.wait_for(".st-key-sense_chart .js-plotly-plot .scatterlayer .trace")
    page.click_point("sense_chart", 5)
    page.wait_for_text("nearest neighbours", within=".st-key-sense_chart")
    page.toggle("sense_corpus_search")
    page.wait_for_text("tokens of", within="[data-testid='stMain']")


def choose_keyed(page: browser.Page, name: str, text: str) -> None:
    """Pick ``text`` in a select box keyed on its context (``dashboard.text_inputs.context_key``)."""
    page.element(f"[class*='st-key-{name}_'] [role='combobox']").click()
    page._wait(lambda d: next((o for o in page._css("[role='option']") if text in o.text), None)).click()
    page.settle()


def play_then_bank(page: browser.Page) -> None:
    """Occurrence #12 of 'play' chosen, then the word changed to 'bank': every box shows bank's own values."""
    page.open("Sense_explorer")
    page.wait_for(".st-key-sense_chart .js-plotly-plot .scatterlayer .trace")
    choose_keyed(page, "sense_query", "#12:")
    page.type_text("sense_word", "bank")
    page.wait_for(".st-key-sense_chart .js-plotly-plot .scatterlayer .trace")


def elmo_then_cove(page: browser.Page) -> None:
    """LSTM-1 chosen under ELMo, then the encoder switched to CoVe: the Layer box names a CoVe layer."""
    page.open("Sense_explorer")
    page.wait_for(".st-key-sense_chart .js-plotly-plot .scatterlayer .trace")
    choose_keyed(page, "sense_layer", "LSTM-1")
    page.choose_radio("sense_encoder", "cove")
    page.wait_for(".st-key-sense_chart .js-plotly-plot .scatterlayer .trace")


def probe_to_explorer(page: browser.Page) -> None:
    """The demo probe, then a click on the LSTM-2 bar of 'bank': the explorer opens on the probe's sample."""
    from selenium.webdriver.common.action_chains import ActionChains

    demo_probe(page)
    bars = page.wait_for(".st-key-probe_chart .barlayer .trace .point path")
    ActionChains(page.driver).move_to_element(bars[2 * 4 + 1]).click().perform()
    page._wait(lambda d: "Sense_explorer" in d.current_url)
    page.wait_for(".st-key-sense_chart .js-plotly-plot .scatterlayer .trace")


def hard_explorer(page: browser.Page) -> None:
    """Senseval 'hard' (4,333 occurrences; the first JSONL file): the estimate, then the embedding; the
    selected occurrence (#0) and its 10 neighbours drawn above the faded cloud, coloured by sense."""
    page.open("Sense_explorer")
    page.choose_radio("sense_source", "Sense-labelled JSONL")
    if page._css(".st-key-sense_embed button"):  # not yet embedded in this server: the estimate, then the button
        page.wait_for_text("on this machine", within="[data-testid='stMain']")
        page.press("Embed ")
    page.wait_for(".st-key-sense_chart .js-plotly-plot .legend", timeout_factor=4)


def hard_by_link(page: browser.Page) -> None:
    """The explorer on 'hard' opened by its URL (embedding it first if this server has not)."""
    page.driver.get(f"{page.url}/Sense_explorer?corpus=hard.jsonl.gz&word=hard")
    drawn = f"{EXPLORER_CHART} .scatterlayer .trace, {EXPLORER_CHART} .gl-container"
    page._wait(lambda d: page._css(f".st-key-sense_embed button, {drawn}"))
    if page._css(".st-key-sense_embed button"):
        page.press("Embed ")
    page.wait_for(drawn, timeout_factor=4)


def projector_tools(page: browser.Page) -> dict:
    """'hard': a search for the sense HARD2 marked, a lasso's slice scored beside the whole and the search, and
    the pointer on the third neighbour line (its point ringed on the scatter)."""
    hard_by_link(page)
    page.choose_option("sense_search_by", "sense")
    page.type_text("sense_search", "hard2")
    page.driver.execute_script("document.querySelector(arguments[0]).scrollIntoView({block: 'center'})", EXPLORER_CHART)
    time.sleep(0.5)  # the lasso is drawn in window pixels: the whole chart in the window first
    traces = page._wait(lambda d: browser.chart_points(d, EXPLORER_CHART))
    points = [p for name, group in traces.items() if name.startswith("HARD") for p in group]
    xs, ys = sorted(p[1] for p in points), sorted(p[2] for p in points)
    low_x, high_x, low_y, high_y = xs[len(xs) // 5], xs[len(xs) // 2], ys[len(ys) // 4], ys[3 * len(ys) // 4]
    page.lasso("sense_chart", [(low_x, low_y), (high_x, low_y + 10), (high_x - 5, high_y), (low_x + 8, high_y - 6)])
    page.wait_for(".st-key-sense_slices table")

    def hover() -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        row = browser.shadow_elements(page.driver, "sense_neighbours_list", "tr[data-occurrence]")[2]
        ActionChains(page.driver).move_to_element(row).perform()
        page._wait(lambda d: d.execute_script("return document.querySelector('.neighbour-hover-mark')"))

    return {"then": hover, "max_height": 1500}


def isolated(page: browser.Page) -> dict:
    """'hard': an occurrence and its 10 neighbours isolated and re-projected, as the Projector's Isolate does."""
    hard_by_link(page)
    page.press("Isolate ")
    page.wait_for_text("isolated", within=f"{EXPLORER_CHART} .gtitle")
    return {"bottom": ".st-key-sense_chart"}


def pasted_text_explorer(page: browser.Page) -> None:
    """Pasted text: suggested words, and the forms of 'run' searched together (typed as forms, so that the
    picture is the same with or without the optional English lemmatizer)."""
    page.open("Sense_explorer")
    page.choose_radio("sense_source", "Paste text")
    page.type_text(
        "sense_text",
        "She runs every morning before work. He ran the company for ten years. They run a small shop. "
        "The river runs through the old town. I ran into an old friend. We will run the tests tonight. "
        "The play runs for two hours. Who runs this place?",
        area=True,
    )
    page.wait_for(".st-key-sense_suggestion button")
    page.type_text("sense_word", "run, runs, ran")
    page.wait_for(".st-key-sense_chart .js-plotly-plot .scatterlayer .trace")


def serve_probe(page: browser.Page) -> None:
    page.open("Layer_probe")
    page.choose_radio("probe_source", "Sense-labelled JSONL")
    page.choose_option("probe_jsonl_file", "serve.jsonl.gz")
    page.press("Run the probe")
    page.wait_for(".st-key-probe_chart .js-plotly-plot .barlayer", timeout_factor=4)


def demo_probe(page: browser.Page) -> None:
    page.open("Layer_probe")
    page.press("Run the probe")
    page.wait_for(".st-key-probe_chart .js-plotly-plot .barlayer")


def attention_default(page: browser.Page) -> None:
    """The page's own example sentence: the audit of its attention."""
    page.open("CoVe_attention")
    page.wait_for(".st-key-attention_chart .js-plotly-plot .heatmaplayer")


def attention_heatmap(page: browser.Page) -> None:
    page.open("CoVe_attention")
    page.type_text("attention_sentence", "The central bank raised interest rates on Tuesday, the minister said.")
    page.wait_for(".st-key-attention_chart .js-plotly-plot .heatmaplayer")
    page.wait_for_text("minister", within="[data-testid='stMain']")


def attention_lines(page: browser.Page) -> None:
    page.open("CoVe_attention")
    page.type_text("attention_sentence", "Two boys play football in the park.")
    page.choose_radio("attention_view", "Lines")
    page.wait_for("iframe")


def home(page: browser.Page) -> None:
    page.open("")
    page.wait_for("[data-testid='stDataFrame']")


def layer_weights(page: browser.Page) -> None:
    page.open("Layer_weights")
    page.wait_for(".st-key-weights_chart .barlayer")


def compare(page: browser.Page) -> None:
    page.open("Compare_models")
    page.wait_for(".st-key-compare_chart_b .js-plotly-plot .scatterlayer .trace", timeout_factor=2)


SHOTS = [
    ("home", home),
    ("sense_explorer", demo_explorer),
    ("sense_explorer_hard", hard_explorer),
    ("sense_explorer_projector", projector_tools),
    ("sense_explorer_isolated", isolated),
    ("sense_explorer_text", pasted_text_explorer),
    ("layer_probe", serve_probe),
    ("layer_probe_demo", demo_probe),
    ("sense_explorer_play_then_bank", play_then_bank),
    ("sense_explorer_elmo_then_cove", elmo_then_cove),
    ("sense_explorer_from_probe", probe_to_explorer),
    ("compare_models", compare),
    ("cove_attention", attention_heatmap),
    ("cove_attention_default", attention_default),
    ("cove_attention_lines", attention_lines),
    ("layer_weights", layer_weights),
]


def shrink(path: Path) -> None:
    """The picture in 256 colours (screenshots of flat colours lose nothing visible), saved optimised."""
    from PIL import Image

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elmo-model", type=Path)
    parser.add_argument("--cove-model", type=Path)
    parser.add_argument("--pipeline", type=Path, nargs="*", default=[], help="one or more trained pipelines")
    parser.add_argument("--sense-data", type=Path)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for each step")
    parser.add_argument("--only", nargs="*", help="names of the screenshots to take (default: all)")
    args = parser.parse_args()
    env = {
        variable: str(value.resolve())
        for variable, value in (
            (ELMO_MODEL_ENV, args.elmo_model),
            (COVE_MODEL_ENV, args.cove_model),
            (SENSE_DATA_ENV, args.sense_data),
        )  # fmt: skip
        if value is not None
    }
    if args.pipeline:
        env[PIPELINE_ENV] = os.pathsep.join(str(path.resolve()) for path in args.pipeline)
    problems = []
    with browser.served_app(ROOT / "app" / "Home.py", env=env) as (url, _server):
        for width in WIDTHS:
            with browser.headless_chromium(width=width, height=1000) as driver:
                for name, steps in SHOTS:
                    if (args.only and name not in args.only) or (width != WIDTHS[0] and name not in NARROW):
                        continue
                    page = browser.Page(driver, url, args.timeout)
                    start = time.perf_counter()
                    picture = steps(page) or {}  # a step returns the picture's options, or None
                    found = browser.layout_problems(driver)
                    problems += [f"{name} at {width} px: {problem}" for problem in found]
                    out = DOCS / f"dashboard_{name}{'' if width == WIDTHS[0] else f'_{width}'}.png"
                    page.full_screenshot(out, **picture)
                    shrink(out)
                    print(f"saved {out.relative_to(ROOT)} ({time.perf_counter() - start:.1f} s)"
                          + (f"; {len(found)} layout problem(s)" if found else ""))  # fmt: skip
    print("\n".join(problems) or "no layout problems at " + " or ".join(f"{w} px" for w in WIDTHS))
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
