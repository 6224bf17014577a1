"""The dashboard's bounded input with the bundled models: huge paths and words get short messages."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from util import REPO

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


def run_page(page: str, **state) -> AppTest:
    at = AppTest.from_file(str(REPO / "app" / "pages" / page), default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def page_messages(at: AppTest) -> list[str]:
    assert not at.exception, [e.value[:300] for e in at.exception]
    return [e.value for e in [*at.error, *at.warning]]


def test_a_5000_character_pipeline_path_gets_a_short_message():
    at = run_page("2_Layer_weights.py")
    at.text_area(key="weights_paths").set_value("/tmp/" + "p" * 5000).run()
    (message,) = page_messages(at)
    assert "is not a directory" in message and len(message) < 300


def test_a_5000_character_model_directory_gets_a_short_message():
    (message,) = page_messages(run_page("1_Sense_explorer.py", sense_model_elmo="/tmp/" + "m" * 5000))
    assert "Could not load" in message and message.count("m" * 70) <= 2 and len(message) < 600


def test_a_1mb_word_is_capped_and_not_echoed():
    at = run_page("1_Sense_explorer.py")
    at.text_input(key="sense_word").set_value("w" * 1_000_000).run()
    (message,) = page_messages(at)
    assert "does not occur" in message and len(message) < 300
