"""What the pages share: context keys, widgets kept across pages, the progress bar of a long embedding.

The dashboard's bounded input with the bundled models: huge paths and words get short messages."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from util import REPO

from spacy_contextual.dashboard.common import context_key


def test_a_context_key_names_its_context():
    assert context_key("sense_query", "play", "d1", "elmo", "default") == context_key(
        "sense_query", "play", "d1", "elmo", "default"
    )
    assert context_key("sense_query", "play", "d1") != context_key("sense_query", "bank", "d1")
    assert context_key("sense_layer", "elmo", "default").startswith("sense_layer_")


def test_an_embedding_past_the_threshold_shows_a_bar_with_a_count():
    def page():
        from spacy_contextual.dashboard import common

        common.PROGRESS_AFTER_S = -1.0  # as if 2 s had passed
        progress = common.progress_bar("Embedding the sentences with elmo")
        progress(64, 4378)

    at = AppTest.from_function(page).run()
    assert not at.exception
    bar = at.get("progress")[0]
    assert bar.proto.text == "Embedding the sentences with elmo: 64 of 4,378 sentences" and bar.proto.value == 1


def test_widgets_get_their_values_back_after_another_page():
    def page():
        import streamlit as st

        from spacy_contextual.dashboard.common import keep_widgets

        keep_widgets(["probe_source"])
        if st.session_state.get("show", True):
            st.radio("Corpus", ["Demo", "JSONL"], key="probe_source")

    at = AppTest.from_function(page).run()
    at.radio(key="probe_source").set_value("JSONL").run()
    at.session_state["show"] = False  # another page: the radio is not drawn, Streamlit forgets its value
    at.run()
    at.session_state["show"] = True
    at.run()
    assert at.radio(key="probe_source").value == "JSONL"


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
