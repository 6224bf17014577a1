"""Screenshots of every dashboard page for the README, taken in headless Chromium.

Serves ``app/Home.py`` on 127.0.0.1, opens each page, presses its primary button where it has one,
waits for the page's chart to be drawn (not a fixed sleep) and saves ``docs/dashboard_<page>.png``.

    python docs/make_screenshots.py [--elmo-model DIR] [--cove-model DIR] [--pipeline DIR] [--sense-data DIR]

Without options the app's own defaults apply (the bundled models).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from spacy_contextual.dashboard.settings import COVE_MODEL_ENV, ELMO_MODEL_ENV, PIPELINE_ENV, SENSE_DATA_ENV

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the browser harness the tests use (not part of the package)
from browser import headless_chromium, served_app  # noqa: E402

DOCS = ROOT / "docs"
# (url path, file name, button to press or None, CSS selector of what must be drawn)
PAGES = [
    ("", "home", None, "[data-testid='stDataFrame']"),
    ("Sense_explorer", "sense_explorer", "Project with", ".st-key-sense_chart .js-plotly-plot .scatterlayer .trace"),
    ("Layer_weights", "layer_weights", None, ".st-key-weights_chart .js-plotly-plot .barlayer"),
    ("CoVe_attention", "cove_attention", None, ".st-key-attention_chart .js-plotly-plot .heatmaplayer"),
    ("Layer_probe", "layer_probe", "Run the probe", ".st-key-probe_chart .js-plotly-plot .barlayer"),
]
MESSAGE = "[data-testid='stAlertContentError'], [data-testid='stAlertContentWarning']"


def screenshot_pages(url: str, timeout: float) -> list[Path]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    saved = []
    with headless_chromium(width=1500, height=1000) as driver:
        for path, name, button, drawn in PAGES:
            driver.set_window_size(1500, 1000)
            driver.get(f"{url}/{path}")
            wait = WebDriverWait(driver, timeout)
            if button:
                wait.until(EC.element_to_be_clickable((By.XPATH, f"//button[contains(., '{button}')]"))).click()
            try:
                wait.until(
                    lambda d, drawn=drawn: (
                        d.find_elements(By.CSS_SELECTOR, drawn) or d.find_elements(By.CSS_SELECTOR, MESSAGE)
                    )
                )
            except Exception:
                print(f"{name}: nothing drawn within {timeout:.0f} s; screenshot as it is")
            if not driver.find_elements(By.CSS_SELECTOR, drawn):
                print(f"{name}: the page shows a message instead of its chart")
            time.sleep(1.0)  # let plotly finish its transition
            height = driver.execute_script(
                "const main = document.querySelector('[data-testid=\"stMain\"]');"
                "return Math.max(main ? main.scrollHeight : 0, document.body.scrollHeight);"
            )
            driver.set_window_size(1500, min(max(int(height) + 40, 800), 4000))
            time.sleep(0.5)
            out = DOCS / f"dashboard_{name}.png"
            driver.save_screenshot(str(out))
            saved.append(out)
            print(f"saved {out.relative_to(ROOT)}")
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elmo-model", type=Path)
    parser.add_argument("--cove-model", type=Path)
    parser.add_argument("--pipeline", type=Path, nargs="*", default=[], help="one or more trained pipelines")
    parser.add_argument("--sense-data", type=Path)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for each page's chart")
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
    with served_app(ROOT / "app" / "Home.py", env=env) as (url, _server):
        screenshot_pages(url, args.timeout)


if __name__ == "__main__":
    main()
