"""End to end: the dashboard served on 127.0.0.1 and driven in headless Chromium (Debian's chromium +
chromium-driver): the sense explorer's Project button draws the contextual scatter with one marker
per occurrence of "play" in the demo sentences."""

import os
from pathlib import Path

import pytest
from browser import CHROMEDRIVER, chromium_binary, headless_chromium, served_app
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
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

HOME = REPO / "app" / "Home.py"
CONTEXTUAL_CHART = "div.st-key-sense_chart .js-plotly-plot"


def test_sense_explorer_renders_its_chart_in_chromium(tmp_path):
    from spacy_contextual.formats.bilm_dir import save_bilm

    model = save_bilm(tiny_bilm(), tmp_path / "elmo")
    expected_points = len(find_occurrences(demo_corpus(), "play"))
    with served_app(HOME, env={"SPACY_CONTEXTUAL_ELMO_MODEL": str(model)}) as (url, server):
        server_pid = server.pid
        with headless_chromium() as driver:
            wait = WebDriverWait(driver, 120)
            driver.get(f"{url}/Sense_explorer")
            button = wait.until(EC.element_to_be_clickable((By.XPATH, "//button[contains(., 'Project with PCA')]")))
            assert "occurrences ready" in driver.find_element(By.TAG_NAME, "body").text
            button.click()
            chart = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, CONTEXTUAL_CHART)))
            wait.until(
                lambda d: len(chart.find_elements(By.CSS_SELECTOR, ".scatterlayer path.point")) == expected_points
            )
            legend = {e.text for e in chart.find_elements(By.CSS_SELECTOR, ".legend text.legendtext")}
            assert legend == {"play-game", "play-music", "play-sport", "play-theatre"}
            # clicking a point makes it the query of the nearest-neighbour list
            query = (By.XPATH, "//p[starts-with(normalize-space(.), 'Query')]")
            first = driver.find_element(*query).text
            assert "Chico Ruiz" in first  # occurrence #0 until a point is clicked
            point = chart.find_elements(By.CSS_SELECTOR, ".scatterlayer path.point")[5]
            ActionChains(driver).move_to_element(point).click().perform()
            wait.until(lambda d: d.find_elements(*query) and d.find_element(*query).text != first)
            assert "play" in driver.find_element(*query).text
        assert server.poll() is None  # still serving until we stop it
    assert server.returncode is not None  # served_app stopped exactly the process it started
    with pytest.raises(ProcessLookupError):
        os.kill(server_pid, 0)
