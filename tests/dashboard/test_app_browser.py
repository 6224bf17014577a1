"""End to end: the dashboard served on 127.0.0.1 and driven in headless Chromium (Debian's chromium +
chromium-driver) at 1400×1000: the Sense explorer draws "play" at once; a click on a point marks it and
its 10 nearest neighbours on the scatter and makes it the query of the KWIC panel beside it; a click on
a bar of the Layer probe opens that word in the Sense explorer."""

import os
from pathlib import Path

import pytest
from browser import CHROMEDRIVER, Page, chromium_binary, headless_chromium, served_app
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
