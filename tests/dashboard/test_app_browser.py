"""End to end: the dashboard served on 127.0.0.1 and driven in headless Chromium (Debian's chromium +
chromium-driver) at 1400×1000: the Sense explorer draws "play" at once; a click on a point marks it and
its 10 nearest neighbours on the scatter and makes it the query of the KWIC panel beside it; a click on
a bar of the Layer probe opens that word in the Sense explorer. At 1280 px: play → bank and ELMo → CoVe
leave no widget showing a value from before; probe → explorer → back opens the explorer on the probe's
sample and finds the probe's corpus and results where they were."""

import os
import time
from pathlib import Path

import pytest
from browser import (
    CHROMEDRIVER,
    Page,
    chromium_binary,
    headless_chromium,
    layout_problems,
    selection_colour,
    served_app,
)
from util import REPO, tiny_bilm

from spacy_contextual.analysis.occurrences import demo_corpus, find_occurrences

pytest.importorskip("streamlit")
pytest.importorskip("selenium")
if chromium_binary() is None or not Path(CHROMEDRIVER).is_file():
    pytest.skip(
        "chromium / chromium-driver are not installed (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = pytest.mark.integration  # processes, servers, spacy train or a browser

HOME = REPO / "app" / "Home.py"
CONTEXTUAL_CHART = ".st-key-sense_chart .js-plotly-plot"


DRAWN_TRACES = """
const chart = document.querySelector(arguments[0]);
if (!chart || !chart.data) return null;
const groups = [...chart.querySelectorAll('.scatterlayer .trace')];
if (groups.length !== chart.data.length) return null;
return groups.map((group, i) => [chart.data[i].name, group.querySelectorAll('path.point').length]);
"""


def drawn_traces(page: Page) -> dict[str, int]:
    """{trace name: markers drawn} of the contextual scatter, read in one step once plotly has drawn it."""
    return dict(page._wait(lambda d: d.execute_script(DRAWN_TRACES, CONTEXTUAL_CHART), message="no scatter drawn"))


@pytest.mark.timeout(600)
def test_a_click_highlights_the_neighbours_and_a_probe_bar_opens_the_explorer(tmp_path):
    from spacy_contextual.formats.bilm_dir import save_bilm

    model = save_bilm(tiny_bilm(), tmp_path / "elmo")
    occurrences = len(find_occurrences(demo_corpus(), "play"))
    with served_app(HOME, env={"SPACY_CONTEXTUAL_ELMO_MODEL": str(model)}) as (url, server):
        server_pid = server.pid
        with headless_chromium(width=1400, height=1000) as driver:
            page = Page(driver, url, timeout=180)
            page.open("Sense_explorer")
            page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")  # drawn at once, no button
            traces = drawn_traces(page)
            senses = {"play-game", "play-music", "play-sport", "play-theatre"}
            assert sum(traces[sense] for sense in senses) == occurrences
            assert traces["10 nearest neighbours"] == 10 and traces["selected #0"] == 1
            point = driver.find_elements(By.CSS_SELECTOR, f"{CONTEXTUAL_CHART} .scatterlayer .trace path.point")[5]
            ActionChains(driver).move_to_element(point).click().perform()
            page.settle()
            page._wait(lambda d: "selected #0" not in drawn_traces(page), message="the click changed nothing")
            traces = drawn_traces(page)
            selected = next(name for name in traces if name.startswith("selected #"))
            assert traces["10 nearest neighbours"] == 10 and traces[selected] == 1  # the click, highlighted
            panel = driver.find_element(By.CSS_SELECTOR, "table.kwic")
            assert len(panel.find_elements(By.CSS_SELECTOR, "tr")) == 10
            assert panel.location["x"] > driver.find_element(By.CSS_SELECTOR, CONTEXTUAL_CHART).location["x"] + 300
            query = driver.find_element(By.XPATH, "//p[starts-with(normalize-space(.), 'Query #')]").text
            assert query.startswith(selected.replace("selected ", "Query "))

            page.open("Layer_probe")
            page.press("Run the probe")
            bars = page.wait_for(".st-key-probe_chart .barlayer .trace .point path")
            ActionChains(driver).move_to_element(bars[4]).click().perform()  # trace 1 (LSTM-1), its first word
            page._wait(lambda d: "Sense_explorer" in d.current_url)
            page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
            word = driver.find_element(By.CSS_SELECTOR, ".st-key-sense_word input").get_attribute("value")
            assert word == "play"  # the demo words in order of appearance: play, bank, bat, spring
            title = driver.find_element(By.CSS_SELECTOR, f"{CONTEXTUAL_CHART} .gtitle").text
            assert title.startswith("LSTM-1")
        assert server.poll() is None  # still serving until we stop it
    assert server.returncode is not None  # served_app stopped exactly the process it started
    with pytest.raises(ProcessLookupError):
        os.kill(server_pid, 0)


@pytest.fixture(scope="module")
def app_page(tmp_path_factory):
    """The dashboard on tiny ELMo and CoVe models, one headless Chromium on it, for the tests below."""
    from util import tiny_cove_mt_dir

    from spacy_contextual.formats.bilm_dir import save_bilm

    models = tmp_path_factory.mktemp("models")
    env = {
        "SPACY_CONTEXTUAL_ELMO_MODEL": str(save_bilm(tiny_bilm(), models / "elmo")),
        "SPACY_CONTEXTUAL_COVE_MODEL": str(tiny_cove_mt_dir(models / "cove")),
    }
    with served_app(HOME, env=env) as (url, _server):
        with headless_chromium(width=1280, height=1000) as driver:
            yield Page(driver, url, timeout=240)


CLIPPED_WORDS = """
const out = [];
for (const box of document.querySelectorAll('table.kwic .left, table.kwic .right')) {
  const edge = box.getBoundingClientRect();
  for (const word of box.querySelectorAll('span')) {
    const r = word.getBoundingClientRect();
    const shown = r.top < edge.bottom - 1 && r.bottom > edge.top + 1;  // on the visible line
    if (shown && (r.left < edge.left - 0.5 || r.right > edge.right + 0.5)) out.push(word.textContent);
  }
}
return out;
"""


def keyed(name: str) -> str:
    """The CSS selector of a widget keyed on its context (``common.context_key``: name + a hash)."""
    return f"[class*='st-key-{name}_']"


def select_box(page: Page, name: str):
    return page.element(f"{keyed(name)} [data-baseweb='select'], {keyed(name)} [role='combobox']")


def selected_text(page: Page, name: str) -> str:
    return shown_value(page, keyed(name))


def shown_value(page: Page, selector: str) -> str:
    """The value a select box shows (in its input, or as text below the label)."""
    box = page.element(selector)
    value = "".join(i.get_attribute("value") or "" for i in box.find_elements(By.CSS_SELECTOR, "input"))
    return value or box.text.split("\n", 1)[-1].strip() or box.get_attribute("innerHTML")


def choose(page: Page, name: str, text: str) -> None:
    select_box(page, name).click()
    option = page._wait(
        lambda d: next((o for o in page._css("[role='option']") if text in o.text), None), message=f"no '{text}'"
    )
    option.click()
    page.settle()


def open_from_sidebar(page: Page, title: str) -> None:
    page.driver.find_element(By.XPATH, f"//a[.//span[normalize-space()='{title}']]").click()
    page._wait(lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid='stMain'] h1").text == title)
    page.settle()


@pytest.mark.timeout(600)
def test_a_new_word_or_encoder_never_shows_a_value_from_the_old_one(app_page):
    page = app_page
    page.open("Sense_explorer")
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
    choose(page, "sense_query", "#12:")
    assert selected_text(page, "sense_query").startswith("#12: Can you play")
    page.type_text("sense_word", "bank")
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
    occurrence = selected_text(page, "sense_query")
    assert occurrence.startswith("#0:") and "bank" in occurrence.lower()  # bank's own first occurrence
    query = page.driver.find_element(By.XPATH, "//p[starts-with(normalize-space(.), 'Query #')]").text
    assert query.startswith("Query #0")

    choose(page, "sense_layer", "LSTM-1")
    page.choose_radio("sense_encoder", "cove")
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
    layer = selected_text(page, "sense_layer")
    title = page.driver.find_element(By.CSS_SELECTOR, f"{CONTEXTUAL_CHART} .gtitle").text
    assert layer == "CoVe-1" and title.startswith("CoVe-1")  # the layer by position; box and chart agree
    kwic = page.driver.find_element(By.CSS_SELECTOR, "table.kwic")
    column = kwic.find_element(By.XPATH, "ancestor::div[@data-testid='stColumn'][1]")
    assert kwic.size["width"] <= column.size["width"]  # the KWIC lines fit their column at 1280 px
    clipped = page.driver.execute_script(CLIPPED_WORDS)
    assert clipped == [], clipped  # every word shown is shown whole


@pytest.mark.timeout(600)
def test_probe_opens_the_explorer_on_its_sample_and_keeps_its_results(app_page):
    page = app_page
    page.open("Layer_probe")
    page.choose_radio("probe_source", "Sense-labelled JSONL")
    page.choose_option("probe_jsonl_file", "hard.jsonl.gz")
    page.press("Run the probe")
    bars = page.wait_for(".st-key-probe_chart .barlayer .trace .point path", timeout_factor=2)
    label = page.driver.find_element(By.CSS_SELECTOR, ".st-key-probe_run button").text
    assert "(400 of 4,333 instances)" in label
    started = time.perf_counter()
    ActionChains(page.driver).move_to_element(bars[1]).click().perform()  # trace 1 (LSTM-1): hard
    page._wait(lambda d: "Sense_explorer" in d.current_url)
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
    jump = time.perf_counter() - started
    main = page.driver.find_element(By.CSS_SELECTOR, "[data-testid='stMain']").text
    assert "The Layer probe's sample: 400 of the 4,333 occurrences" in main
    assert page.driver.find_element(By.CSS_SELECTOR, f"{CONTEXTUAL_CHART} .gtitle").text.startswith("LSTM-1: 400")
    assert jump < 60, jump  # the sample's vectors come from the shared store: nothing is embedded again

    open_from_sidebar(page, "Layer probe")
    chosen = page.driver.execute_script(
        "return document.querySelector('.st-key-probe_source input:checked').closest('label').innerText"
    )
    assert chosen.strip() == "Sense-labelled JSONL"
    assert "hard.jsonl.gz" in shown_value(page, ".st-key-probe_jsonl_file")
    page.wait_for(".st-key-probe_chart .barlayer .trace .point path")  # the results, without pressing Run again


def word_value(page: Page, key: str) -> str:
    return page.driver.find_element(By.CSS_SELECTOR, f".st-key-{key} input").get_attribute("value")


@pytest.mark.timeout(900)
def test_the_session_keeps_its_place_across_pages(app_page):
    """explorer → probe → explorer keeps the word, the occurrence and the layer; ELMo LSTM-1 → CoVe-1 →
    LSTM-1; Compare models has the same word; the attention sentence survives another page."""
    page = app_page
    page.open("Sense_explorer")  # a fresh session
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
    page.type_text("sense_word", "bank")
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
    choose(page, "sense_query", "#3:")
    choose(page, "sense_layer", "LSTM-1")
    open_from_sidebar(page, "Layer probe")
    open_from_sidebar(page, "Sense explorer")
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
    main = page.driver.find_element(By.CSS_SELECTOR, "[data-testid='stMain']").text
    assert word_value(page, "sense_word") == "bank" and "Enter a word" not in main
    assert selected_text(page, "sense_query").startswith("#3:") and selected_text(page, "sense_layer") == "LSTM-1"
    page.choose_radio("sense_encoder", "cove")
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
    assert selected_text(page, "sense_layer") == "CoVe-1" and selected_text(page, "sense_query").startswith("#3:")
    page.choose_radio("sense_encoder", "elmo")
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
    assert selected_text(page, "sense_layer") == "LSTM-1"
    title = page.driver.find_element(By.CSS_SELECTOR, f"{CONTEXTUAL_CHART} .gtitle").text
    assert title.startswith("LSTM-1: 14 occurrences")

    open_from_sidebar(page, "Compare models")
    page.wait_for(".st-key-compare_chart_a .js-plotly-plot .scatterlayer .trace")
    assert word_value(page, "compare_word") == "bank" and selected_text(page, "compare_query").startswith("#3:")

    open_from_sidebar(page, "CoVe attention")
    page.type_text("attention_sentence", "A **dog** runs .")
    page.wait_for(".st-key-attention_chart .js-plotly-plot")
    alerts = " ".join(e.text for e in page.driver.find_elements(By.CSS_SELECTOR, "[data-testid='stAlert']"))
    assert "''" not in alerts  # markdown typed is shown as typed, never rendered
    open_from_sidebar(page, "Layer weights")
    open_from_sidebar(page, "CoVe attention")
    assert word_value(page, "attention_sentence") == "A **dog** runs ."
    open_from_sidebar(page, "Sense explorer")
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
    assert word_value(page, "sense_word") == "bank"


def magenta(pixels) -> bool:
    """The selected star's colour (#FF00FF, a colour no category has) is what is drawn there."""
    return any(r > 200 and g < 90 and b > 200 for r, g, b in pixels)


def open_large_corpus(page: Page, path: str | None, at_most: int | None = None) -> None:
    """The explorer on a sense-labelled file (the first one the app lists, or ``path``), its large
    embedding started with the button that says how long it takes."""
    page.choose_radio("sense_source", "Sense-labelled JSONL")
    if path is not None:
        page.choose_option("sense_jsonl_file", "other path")
        page.type_text("sense_jsonl_path", path)
    if at_most is not None:
        page.type_text("sense_max", str(at_most))
    page.wait_for_text("on this machine", within="[data-testid='stMain']")
    page.press("Embed ")
    page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace, {CONTEXTUAL_CHART} .gl-container", timeout_factor=4)


def write_large_corpus(path: Path, occurrences: int = 20_000) -> Path:
    """A sense-labelled JSONL file with ``occurrences`` occurrences of 'spring' (three senses)."""
    import json
    import random

    rng = random.Random(0)
    contexts = {"SEASON": ["in", "early", "the", "flowers"], "WATER": ["hot", "the", "drank", "mountain"],
                "COIL": ["steel", "the", "bed", "broken"]}  # fmt: skip
    with path.open("w") as out:
        for i in range(occurrences):
            sense = rng.choice(list(contexts))
            words = rng.sample(contexts[sense], 3)
            out.write(json.dumps({"tokens": [*words, "spring", f"w{i % 97}"], "target": 3, "sense": sense,
                                  "word": "spring"}) + "\n")  # fmt: skip
    return path


@pytest.mark.timeout(1500)
def test_the_selection_is_visible_on_4333_and_on_20000_occurrences(app_page, tmp_path):
    page = app_page
    for path, at_most, count in ((None, None, "4,333"), (str(write_large_corpus(tmp_path / "spring.jsonl")), 20_000,
                                                         "20,000")):  # fmt: skip
        page.open("Sense_explorer")
        page.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace")
        open_large_corpus(page, path, at_most)
        title = page.driver.find_element(By.CSS_SELECTOR, f"{CONTEXTUAL_CHART} .gtitle").text
        assert f": {count} occurrences" in title
        main = page.driver.find_element(By.CSS_SELECTOR, "[data-testid='stMain']").text
        assert "on this machine" not in main and not page._css(".st-key-sense_embed button")  # said, then gone
        # the widgets show what the chart uses, although the run before (the estimate) stopped before them
        assert selected_text(page, "sense_layer") == "LSTM-2" and title.startswith("LSTM-2")
        assert page._css(".st-key-sense_auto_k input")[0].is_selected()
        assert magenta(selection_colour(page.driver, CONTEXTUAL_CHART)), f"the selected star is hidden on {count}"
        problems = [p for p in layout_problems(page.driver) if "sense_chart" in p]
        assert problems == [], problems  # the legend below the plot, the plot the chart's width


PAGES = {  # url path: what must be drawn before the page is looked at
    "": "[data-testid='stDataFrame']",
    "Sense_explorer": f"{CONTEXTUAL_CHART} .scatterlayer .trace",
    "Layer_weights": ".st-key-weights_chart .js-plotly-plot .barlayer",
    "CoVe_attention": ".st-key-attention_chart .js-plotly-plot .heatmaplayer",
    "Layer_probe": ".st-key-probe_chart .js-plotly-plot .barlayer",
    "Compare_models": ".st-key-compare_chart_b .js-plotly-plot .scatterlayer .trace",
}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("width", [1280, 800])
def test_every_page_fits_the_window(app_page, width):
    """Nothing runs out of the window, no label, option, select box or table is cut, charts keep their
    titles clear of the toolbar and their legends below, at 1280 and at 800 px."""
    page = app_page
    page.driver.set_window_size(width, 1000)
    try:
        found = {}
        for path, drawn in PAGES.items():
            page.open(path)
            if path == "Layer_probe":
                page.press("Run the probe")
            page.wait_for(drawn)
            found[path or "Home"] = layout_problems(page.driver)
        assert found == {path or "Home": [] for path in PAGES}
    finally:
        page.driver.set_window_size(1280, 1000)
