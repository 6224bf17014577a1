"""End to end: the dashboard served on 127.0.0.1 and driven in headless Chromium (Debian's chromium +
chromium-driver) at 1400×1000: the Sense explorer draws "play" at once; a click on a point marks it and
its 10 nearest neighbours on the scatter and makes it the query of the KWIC panel beside it; a click on
a bar of the Layer probe opens that word in the Sense explorer. At 1280 px: play → bank and ELMo → CoVe
leave no widget showing a value from before; probe → explorer → back opens the explorer on the probe's
sample and finds the probe's corpus and results where they were."""

import os
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from browser import (
    CHROMEDRIVER,
    Page,
    chart_points,
    chromium_binary,
    headless_chromium,
    layout_problems,
    selection_colour,
    served_app,
    shadow_elements,
)
from util import DATA, REPO, tiny_bilm

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
SENSES = DATA / "senses"
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
            rows = shadow_elements(driver, "sense_neighbours_list", "tr[data-occurrence]")
            assert len(rows) == 10  # the neighbour list, beside the chart
            assert rows[0].location["x"] > driver.find_element(By.CSS_SELECTOR, CONTEXTUAL_CHART).location["x"] + 300
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
            page = Page(driver, url, timeout=240)
            page.elmo_dir = Path(env["SPACY_CONTEXTUAL_ELMO_MODEL"])
            yield page


CLIPPED_WORDS = """
const out = [];
const roots = [document, ...[...document.querySelectorAll('*')].filter(e => e.shadowRoot).map(e => e.shadowRoot)];
for (const box of roots.flatMap(root => [...root.querySelectorAll('table.kwic .left, table.kwic .right')])) {
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
    """The CSS selector of a widget keyed on its context (``text_inputs.context_key``: name + a hash)."""
    return f"[class*='st-key-{name}_']"


def select_box(page: Page, name: str):
    return page.element(f"{keyed(name)} [role='combobox']")


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


def open_from_sidebar(page: Page, title: str, heading: str | None = None) -> None:
    page.driver.find_element(By.XPATH, f"//a[.//span[normalize-space()='{title}']]").click()
    page._wait(lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid='stMain'] h1").text == (heading or title))
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
    kwic = shadow_elements(page.driver, "sense_neighbours_list", "table.kwic")[0]
    column = page.driver.find_element(By.CSS_SELECTOR, ".st-key-sense_neighbours_list").find_element(
        By.XPATH, "ancestor::div[@data-testid='stColumn'][1]"
    )
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
    page.type_text("weights_paths", "/no/such/pipeline", area=True)
    open_from_sidebar(page, "Home", "spacy-contextual dashboard")
    open_from_sidebar(page, "Layer weights")  # the typed path is the session's, and in the URL
    field = page.driver.find_element(By.CSS_SELECTOR, ".st-key-weights_paths textarea")
    assert field.get_attribute("value") == "/no/such/pipeline" and "pipelines=%2Fno%2Fsuch" in page.driver.current_url
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


@pytest.fixture(scope="module")
def large_corpus(tmp_path_factory) -> Path:
    """The generated 20,000-occurrence file (never committed: made here, in a temporary folder)."""
    return write_large_corpus(tmp_path_factory.mktemp("corpora") / "spring.jsonl")


CORPORA = {  # name: (the explorer's URL query, the file)
    "hard": ("corpus=hard.jsonl.gz&word=hard", SENSES / "hard.jsonl.gz"),
    "20,000": (None, None),  # the generated file: see ``corpus_query``
}


def corpus_query(name: str, large: Path) -> tuple[str, Path]:
    if name == "hard":
        return CORPORA["hard"]
    return f"corpus={quote(str(large))}&word=spring", large  # 5,000 of them, stratified by sense


@pytest.mark.timeout(1500)
def test_the_selection_is_visible_on_4333_and_on_20000_occurrences(app_page, large_corpus):
    page = app_page
    for path, at_most, count in ((None, None, "4,333"), (str(large_corpus), 20_000, "20,000")):
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


def open_by_url(page: Page, query: str) -> None:
    """A fresh session of the explorer on the URL's state (its embedding started if the server lacks it)."""
    page.driver.get(f"{page.url}/Sense_explorer?{query}")
    drawn = f"{CONTEXTUAL_CHART} .scatterlayer .trace, {CONTEXTUAL_CHART} .gl-container"
    page._wait(lambda d: page._css(f".st-key-sense_embed button, {drawn}"), message="neither a chart nor a button")
    if page._css(".st-key-sense_embed button"):
        page.press("Embed ")
    page.wait_for(drawn, timeout_factor=4)


MARKS = ("nearest neighbours", "search matches", "(halo)", "selected #")


def cloud(page: Page) -> list[tuple[int, float, float, str]]:
    """The points of the scatter's categories (not its marks): (occurrence, x, y, sense)."""
    traces = page._wait(lambda d: chart_points(d, CONTEXTUAL_CHART), message="no scatter")
    return [point for name, points in traces.items() if not any(m in name for m in MARKS) for point in points]


def trace_occurrences(page: Page, ending: str) -> list[int] | None:
    """The occurrences of the scatter's trace whose name ends with ``ending`` (None: no such trace)."""
    traces = chart_points(page.driver, CONTEXTUAL_CHART) or {}
    found = [points for name, points in traces.items() if name.endswith(ending) and "(halo)" not in name]
    return [point[0] for point in found[0]] if found else None


def star(page: Page) -> int | None:
    traces = chart_points(page.driver, CONTEXTUAL_CHART) or {}
    return next((int(name.split("#")[1]) for name in traces if name.startswith("selected #")), None)


HOVER_MARK = """
const ring = document.querySelector('.neighbour-hover-mark');
if (!ring) return null;
const r = ring.getBoundingClientRect();
return [+ring.dataset.occurrence, r.left + r.width / 2, r.top + r.height / 2];
"""


def inside(polygon: list[tuple[float, float]], x: float, y: float) -> bool:
    """Whether (x, y) lies inside ``polygon`` (even-odd rule)."""
    result = False
    for (x1, y1), (x2, y2) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            result = not result
    return result


def slice_row(page: Page, name: str) -> dict[str, str]:
    """The row ``name`` of the slice table, as {column: text}."""
    table = page.element(".st-key-sense_slices table.slices")
    header = [th.text for th in table.find_elements(By.CSS_SELECTOR, "th")]
    for row in table.find_elements(By.CSS_SELECTOR, "tr"):
        cells = [cell.text for cell in row.find_elements(By.CSS_SELECTOR, "td")]
        if cells and cells[0] == name:
            return dict(zip(header, cells, strict=True))
    raise AssertionError(f"no row {name!r} in {table.text}")


@pytest.fixture(scope="module")
def vectors_by_hand(app_page, large_corpus):
    """Per corpus, as the page has them: the LSTM-2 vectors, senses and forms of the occurrences it shows (all
    4,333 of 'hard'; 5,000 of the 20,000, drawn as ``analysis.sampling.draw`` draws them) and the sentence of
    each, computed here."""
    from spacy_contextual.analysis.model_loading import load_model
    from spacy_contextual.analysis.occurrence_store import occurrence_layers
    from spacy_contextual.analysis.occurrences import read_sense_jsonl
    from spacy_contextual.analysis.sampling import draw
    from spacy_contextual.dashboard.sense_explorer import DEFAULT_OCCURRENCES

    embed = load_model("elmo", str(app_page.elmo_dir)).embed_sentences
    found = {}
    for name in CORPORA:
        records = read_sense_jsonl(corpus_query(name, large_corpus)[1])
        occurrences = find_occurrences(records, "hard" if name == "hard" else "spring")
        occurrences = occurrences.iloc[draw(occurrences["sense"].tolist(), DEFAULT_OCCURRENCES).indices]
        layers = occurrence_layers(embed, records, occurrences)
        sentences = [" ".join(records[r]["tokens"]) for r in occurrences["record"]]
        found[name] = (layers[:, 2], occurrences["sense"].tolist(), occurrences["token"].tolist(), sentences)
    return found


@pytest.mark.timeout(900)
@pytest.mark.parametrize("width", [1280, 800])
@pytest.mark.parametrize("corpus", list(CORPORA))
def test_search_isolate_neighbours_lasso_and_a_shared_url(app_page, large_corpus, vectors_by_hand, corpus, width):
    """As in the Embedding Projector and LIT, on 'hard' (4,333 points) and on 20,000, at 1280 and 800 px: the
    neighbour list marks a point on hover and makes it the query on click; Isolate draws the query and its k
    neighbours only; the search marks exactly the matches (by sense; by a regex on the sentence); a lasso's
    slice scores what the same computation by hand gives; the URL opens the same state in a fresh browser."""
    import re

    from spacy_contextual.analysis.slices import occurrence_votes

    page = app_page
    page.driver.set_window_size(width, 1000)
    vectors, senses, forms, sentences = vectors_by_hand[corpus]
    query, _ = corpus_query(corpus, large_corpus)
    try:
        open_by_url(page, query)
        shown = "all 4,333 occurrences" if corpus == "hard" else "5,000 of 20,000 occurrences, stratified by sense"
        assert shown in page.driver.find_element(By.CSS_SELECTOR, "[data-testid='stMain']").text
        rows = shadow_elements(page.driver, "sense_neighbours_list", "tr[data-occurrence]")
        neighbours = [int(row.get_attribute("data-occurrence")) for row in rows]
        assert len(neighbours) == 10
        page.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", rows[2])
        time.sleep(0.5)  # a smooth scroll ends
        ActionChains(page.driver).move_to_element(rows[2]).perform()
        ring = page._wait(lambda d: d.execute_script(HOVER_MARK), message="hovering a line marked nothing")
        point = next(p for name, points in chart_points(page.driver, CONTEXTUAL_CHART).items()
                     if not any(m in name for m in MARKS) for p in points if p[0] == neighbours[2])  # fmt: skip
        assert ring[0] == neighbours[2] and abs(ring[1] - point[1]) < 3 and abs(ring[2] - point[2]) < 3
        rows[2].click()  # the neighbour becomes the query
        page.settle()
        page._wait(lambda d: star(page) == neighbours[2], message="clicking a neighbour did not move the query")
        query_now = neighbours[2]
        neighbours = [int(r.get_attribute("data-occurrence")) for r in shadow_elements(
            page.driver, "sense_neighbours_list", "tr[data-occurrence]")]  # fmt: skip

        page.press("Isolate ")
        page.wait_for_text("isolated", within=f"{CONTEXTUAL_CHART} .gtitle")
        assert {p[0] for p in cloud(page)} == {query_now, *neighbours}  # the selection and its k neighbours only
        page.press("Show all")

        needle = "HARD2" if corpus == "hard" else "COIL"
        page.choose_option("sense_search_by", "sense")
        page.type_text("sense_search", needle.lower())
        by_hand = sorted(p[0] for p in cloud(page) if needle.lower() in p[3].lower())
        assert trace_occurrences(page, "search matches") == by_hand and by_hand
        pattern = r"\bvery hard\b" if corpus == "hard" else r"^hot .*spring w1\d$"
        page.choose_option("sense_search_by", "sentence")
        page.toggle("sense_search_regex")
        page.type_text("sense_search", pattern)
        by_hand = [i for i, sentence in enumerate(sentences) if re.search(pattern, sentence, re.IGNORECASE)]
        assert sorted(trace_occurrences(page, "search matches") or []) == by_hand and by_hand

        points = cloud(page)
        xs, ys = sorted(p[1] for p in points), sorted(p[2] for p in points)
        low_x, high_x = xs[len(xs) // 5], xs[len(xs) // 2]
        low_y, high_y = ys[len(ys) // 4], ys[3 * len(ys) // 4]
        polygon = [(low_x, low_y), (high_x, low_y + 10), (high_x - 5, high_y), (low_x + 8, high_y - 6)]
        lasso, members = page.lasso("sense_chart", polygon)  # the occurrences plotly selected
        drawn = {p[0] for p in points if inside(lasso, p[4], p[5])}  # and those inside its lasso, by hand
        assert len(drawn.symmetric_difference(members)) <= len(members) // 100  # at most points on its edge
        row = page._wait(lambda d: page._css(".st-key-sense_slices table") and slice_row(page, "slice (box or lasso)"))

        votes = occurrence_votes(vectors, senses, forms, type_level=False)
        majority = max(set(senses[i] for i in members), key=lambda s: sum(senses[i] == s for i in members))
        share = sum(senses[i] == majority for i in members) / len(members)
        assert int(row["size"].replace(",", "")) == len(members) > 10
        assert (row["majority sense"], float(row["majority share"])) == (majority, round(share, 2))
        assert abs(float(row["5-NN purity"]) - votes[members].mean()) <= 0.011  # by hand, on the same vectors
        problems = layout_problems(page.driver)
        assert problems == [], problems  # with the search, the slice and the list drawn

        choose(page, "sense_layer", "LSTM-1")
        page._wait(lambda d: "layer=1" in d.current_url and "occurrence=" in d.current_url)
        link = page.driver.current_url
        with headless_chromium(width=width, height=1000) as fresh:  # a new browser: nothing of this session
            other = Page(fresh, page.url, timeout=240)
            fresh.get(link)
            other.wait_for(f"{CONTEXTUAL_CHART} .scatterlayer .trace, {CONTEXTUAL_CHART} .gl-container")
            assert star(other) == query_now and selected_text(other, "sense_layer") == "LSTM-1"
            assert word_value(other, "sense_word") == ("hard" if corpus == "hard" else "spring")
            assert fresh.find_element(By.CSS_SELECTOR, ".st-key-sense_search input").get_attribute("value") == pattern
            assert sorted(trace_occurrences(other, "search matches") or []) == by_hand
            source = fresh.execute_script(
                "return document.querySelector('.st-key-sense_source input:checked').closest('label').innerText"
            )
            assert source.strip() == "Sense-labelled JSONL" and fresh.current_url == link
    finally:
        page.driver.set_window_size(1280, 1000)


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
    """Nothing runs out of the window; no label, option, select box (the file picker shows its file's name) or
    table is cut, and no table cell breaks a word or a number; charts keep their titles clear of the toolbar,
    their legends below and no label over another, at 1280 and at 800 px, and again after the window is
    resized to the other width; the attention's line view is as tall as its words and shows both languages."""
    page = app_page
    other = 800 if width == 1280 else 1280
    page.driver.set_window_size(width, 1000)
    try:
        found = {}
        for path, drawn in PAGES.items():
            page.open(path)
            if path == "Layer_probe":
                page.press("Run the probe")
            page.wait_for(drawn)
            found[path or "Home"] = layout_problems(page.driver)
            page.driver.set_window_size(other, 1000)
            time.sleep(1)  # plotly redraws on resize
            page.settle()
            found[f"{path or 'Home'} resized"] = layout_problems(page.driver)
            page.driver.set_window_size(width, 1000)
        page.open("CoVe_attention")
        page.choose_radio("attention_view", "Lines")
        page.wait_for("iframe")
        found["CoVe_attention lines"] = layout_problems(page.driver)
        lines = page.driver.execute_script(
            "const doc = document.querySelector('iframe').contentDocument;"
            "return [...doc.querySelectorAll('text.tok')].map(t => [t.dataset.side, t.getBoundingClientRect().right,"
            " document.querySelector('iframe').getBoundingClientRect().width]);"
        )
        assert {side for side, _, _ in lines} == {"s", "t"} and all(right <= frame for _, right, frame in lines)
        page.open("Sense_explorer")
        page.choose_radio("sense_source", "Sense-labelled JSONL")
        assert shown_value(page, ".st-key-sense_jsonl_file") == "hard.jsonl.gz"  # the name, not its folder
        found["Sense_explorer file picker"] = [p for p in layout_problems(page.driver) if "select box" in p]
        assert found == {name: [] for name in found}
    finally:
        page.driver.set_window_size(1280, 1000)


LINK = '<a href="http://evil.example/login">login</a>'
IMAGE = '<img src="http://evil.example/x.png" onerror="window.pwned = 1">'
MARKDOWN_LINK = "[w](http://evil.example/w)"

FOUND_MARKUP = """
const roots = [document];
for (const frame of document.querySelectorAll('iframe')) if (frame.contentDocument) roots.push(frame.contentDocument);
for (const root of [...roots]) {
  for (const el of root.querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
}
const found = roots.flatMap(root => [...root.querySelectorAll('a[href*="evil.example"], img[src*="evil.example"]')]);
const where = (el) => { const keyed = el.closest('[class*="st-key-"], [data-testid]');
  return keyed ? (keyed.className.match(/st-key-[\\w-]+/) || [keyed.dataset.testid])[0] : el.tagName; };
return [found.map(el => `${where(el)}: ${el.outerHTML.slice(0, 60)}`), window.pwned === 1,
        roots.map(root => (root.body || root).textContent || '').join(' ').replaceAll('\u2060', '')];
"""


def write_markup_corpus(path: Path) -> Path:
    """A sense-labelled file whose senses, and one word, are HTML and markdown: data that must be shown as text."""
    import json

    senses = [LINK, IMAGE, "plain"]
    with path.open("w") as out:
        for i in range(36):
            tokens = ["the", ["river", "money", "steep"][i % 3], "bank", f"w{i}", "<b>bold</b>"]
            out.write(json.dumps({"tokens": tokens, "target": 2, "sense": senses[i % 3], "word": "bank"}) + "\n")
        record = {"tokens": ["a", MARKDOWN_LINK, "here"], "target": 1, "sense": "S", "word": MARKDOWN_LINK}
        out.write((json.dumps(record) + "\n") * 6)
    return path


@pytest.mark.timeout(600)
def test_data_is_shown_as_text_never_as_markup(app_page, tmp_path):
    """Sense labels holding a link and an image, a word form holding <b>, a word that is a markdown link: on the
    explorer (legend, hover data, neighbour list, slice table, word suggestions), the probe (ticks, warnings,
    tables) and the comparison, no link or image is made of them, and their text is shown as typed."""
    page = app_page
    corpus = write_markup_corpus(tmp_path / "markup.jsonl")
    open_by_url(page, f"corpus={quote(str(corpus))}&word=bank")
    page.type_text("sense_search", "evil")
    page.choose_option("sense_search_by", "sense")
    checks = {}
    found, pwned, text = page.driver.execute_script(FOUND_MARKUP)
    checks["explorer"] = (found, pwned)
    legend = " ".join(e.text for e in page.driver.find_elements(By.CSS_SELECTOR, f"{CONTEXTUAL_CHART} .legendtext"))
    assert LINK in legend and IMAGE in legend  # the label, as typed
    assert "<b>bold</b>" in text and MARKDOWN_LINK in text  # the sentences and the suggested word, as typed
    # (markdown's text carries an invisible word joiner in "://": the same characters to the reader)
    assert slice_row(page, "search: sense contains 'evil'")["majority sense"] in (LINK, IMAGE)  # as typed
    page.open("Layer_probe")
    page.driver.get(f"{page.url}/Layer_probe?corpus={quote(str(corpus))}")
    page.wait_for("[data-testid='stMain'] h1")
    page.press("Run the probe")
    page.wait_for(".st-key-probe_chart .js-plotly-plot .barlayer")
    found, pwned, text = page.driver.execute_script(FOUND_MARKUP)
    checks["probe"] = (found, pwned)
    assert MARKDOWN_LINK in text  # the word as a tick label and in the tables, as typed
    page.driver.get(f"{page.url}/Compare_models?corpus={quote(str(corpus))}&word=bank")
    page.wait_for(".st-key-compare_chart_b .js-plotly-plot .scatterlayer .trace")
    found, pwned, text = page.driver.execute_script(FOUND_MARKUP)
    checks["compare"] = (found, pwned)
    assert LINK in text
    assert checks == {name: ([], False) for name in checks}, checks


BROKEN_LAYOUT = """data:text/html,<html><body style='margin:0'>
<table><tr><td style='width:18px;overflow-wrap:anywhere;font-size:14px'>HARD1</td><td>two words</td></tr></table>
<div data-testid='stSelectbox'><input role='combobox' value='/long/path/to/shared/data/senses/hard.jsonl.gz'
 style='width:60px'></div></body></html>"""


@pytest.mark.timeout(120)
def test_the_layout_check_sees_a_split_word_and_a_cut_select_box():
    """``layout_problems`` fails on a word or number broken across lines inside a table cell, and sees a select
    box as Streamlit draws it today (a react-aria combobox input)."""
    with headless_chromium(width=800, height=600) as driver:
        driver.get(BROKEN_LAYOUT.replace("\n", ""))
        problems = layout_problems(driver)
    assert any("breaks 'HARD1' across" in p for p in problems), problems
    assert any(p.startswith("select box cut: /long/path") for p in problems), problems
    assert not any("'two'" in p or "'words'" in p for p in problems)  # wrapping between words is fine


def test_the_layout_check_sees_a_cut_chart_title(tmp_path):
    """A chart title wider than its chart (plotly clips it at the chart's edge) is reported; one that fits is not."""
    import plotly.graph_objects as go

    def page(title: str) -> str:
        figure = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]), layout={"title": title, "width": 300, "height": 300})
        path = tmp_path / f"chart_{len(title)}.html"
        path.write_text(figure.to_html(include_plotlyjs=True, full_html=True), encoding="utf-8")
        return path.as_uri()

    with headless_chromium(width=800, height=600) as driver:
        driver.get(page("LSTM-2: 11 of 4,333 occurrences, isolated and re-projected"))
        cut = layout_problems(driver)
        driver.get(page("LSTM-2: 11 of 4,333"))
        fits = layout_problems(driver)
    assert any("its title is cut: LSTM-2: 11 of 4,333 occurrences" in p for p in cut), cut
    assert not any("title" in p for p in fits), fits
