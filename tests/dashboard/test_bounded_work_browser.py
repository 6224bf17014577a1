"""Work bounded by its session, in headless Chromium on a served dashboard: a large embedding shows a progress
bar with a count from its start, and stops within a few seconds when its session moves on (another page
opened: a rerun) or ends (the browser closed): the server's CPU time stops growing. The corpus is made
here (long sentences of many distinct words, so that it takes a while even on the tiny model)."""

import json
import os
import random
import re
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from browser import CHROMEDRIVER, Page, chromium_binary, headless_chromium, served_app
from util import REPO, tiny_bilm

pytest.importorskip("streamlit")
pytest.importorskip("selenium")
if chromium_binary() is None or not Path(CHROMEDRIVER).is_file():
    pytest.skip("chromium / chromium-driver are not installed", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = pytest.mark.integration

IDLE_AFTER_S = 8.0  # the chunk in hand ends (about 2 s of work, longer on a busy machine), then the run stops
WINDOW_S = 4.0
IDLE_CPU_S = 0.8  # CPU seconds an idle server may spend in WINDOW_S


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy_after_stop(pid: int) -> float:
    """The CPU seconds the server spends in ``WINDOW_S``, once ``IDLE_AFTER_S`` have passed."""
    time.sleep(IDLE_AFTER_S)
    before = cpu_seconds(pid)
    time.sleep(WINDOW_S)
    return cpu_seconds(pid) - before


def write_long_corpus(path: Path, records: int = 10_000, length: int = 60) -> Path:
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(5000)]
    with path.open("w") as out:
        for i in range(records):
            tokens = rng.choices(vocabulary, k=length)
            tokens[length // 2] = "spring"
            out.write(json.dumps({"tokens": tokens, "target": length // 2, "sense": f"S{i % 3}", "word": "spring"}))
            out.write("\n")
    return path


def start_embedding(page: Page, link: str) -> str:
    """Open ``link``, press the button that starts the embedding, and return the progress bar's first text."""
    page.driver.get(link)
    page._wait(lambda d: page._css(".st-key-sense_embed button"), message="no button to start the embedding")
    page.driver.find_element(By.CSS_SELECTOR, ".st-key-sense_embed button").click()
    bar = page._wait(
        lambda d: next((e.text for e in page._css("[data-testid='stProgress']") if "tokens" in e.text), None),
        timeout=15,
        message="the embedding showed no progress",
    )
    page._wait(
        lambda d: any(" 0 of " not in e.text for e in page._css("[data-testid='stProgress']")),
        message="the embedding made no progress",
    )
    return bar


@pytest.mark.timeout(600)
def test_an_embedding_shows_progress_and_stops_when_its_session_moves_on_or_ends(tmp_path):
    from spacy_contextual.formats.bilm_dir import save_bilm

    model = save_bilm(tiny_bilm(), tmp_path / "elmo")
    corpus = write_long_corpus(tmp_path / "long.jsonl")
    with served_app(REPO / "app" / "Home.py", env={"SPACY_CONTEXTUAL_ELMO_MODEL": str(model)}) as (url, server):
        link = f"{url}/Sense_explorer?corpus={quote(str(corpus))}&word=spring"
        with headless_chromium(width=1280, height=1000) as driver:
            page = Page(driver, url, timeout=120)
            bar = start_embedding(page, link)
            assert re.match(r"Embedding [\d,]+ sentences with elmo: [\d,]+ of [\d,]+ tokens", bar), bar
            driver.find_element(By.XPATH, "//a[.//span[normalize-space()='Home']]").click()  # a rerun, elsewhere
            assert busy_after_stop(server.pid) < IDLE_CPU_S  # the embedding stopped with the run
            start_embedding(page, link)  # a new session picks up where the store stopped
        assert busy_after_stop(server.pid) < IDLE_CPU_S  # the browser closed: the session ended, and its work
        assert server.poll() is None  # still serving
