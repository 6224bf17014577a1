"""What the pages share: context keys, widgets kept across pages, the progress bar of a long embedding.

The dashboard's bounded input with the bundled models: huge paths and words get short messages."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from util import REPO

from spacy_contextual.dashboard.text_inputs import context_key


def test_a_context_key_names_its_context():
    assert context_key("sense_query", "play", "d1", "elmo", "default") == context_key(
        "sense_query", "play", "d1", "elmo", "default"
    )
    assert context_key("sense_query", "play", "d1") != context_key("sense_query", "bank", "d1")
    assert context_key("sense_layer", "elmo", "default").startswith("sense_layer_")


def test_every_embedding_shows_a_bar_with_a_count_from_its_start():
    def page():
        import streamlit as st

        from spacy_contextual.dashboard.embedding_progress import progress_bar

        progress = progress_bar("Embedding 4,378 sentences with elmo")
        progress(0, 110_000)
        st.session_state["first"] = st.session_state.get("first") or "drawn"
        progress(2_560, 110_000)

    at = AppTest.from_function(page).run()
    assert not at.exception
    bar = at.get("progress")[0]
    assert bar.proto.text.startswith("Embedding 4,378 sentences with elmo: 2,560 of 110,000 tokens, about ")
    assert bar.proto.text.endswith(" left") and bar.proto.value == 2


def test_durations_read_plainly():
    from spacy_contextual.dashboard.embedding_progress import duration

    assert [duration(s) for s in (0.2, 42.4, 60, 141, 3600)] == ["1 s", "42 s", "1 min", "2 min 20 s", "60 min"]


def test_the_session_gives_widgets_their_values_back_and_shares_names():
    def page():
        import streamlit as st

        from spacy_contextual.dashboard import session

        page = st.session_state.get("page", "a")
        options = ["Demo", "JSONL"] if page == "a" else ["Demo", "Paste", "JSONL"]
        if page != "none":
            st.radio("Corpus", options, key=session.bind(f"{page}_source", "source", "Demo", options))
        if page == "c":  # a page whose options lack the session's value shows its default, and keeps the value
            st.radio("Corpus", ["Demo"], key=session.bind("c_only_demo", "source", "Demo", ["Demo"]))

    at = AppTest.from_function(page).run()
    at.radio(key="a_source").set_value("JSONL").run()
    at.session_state["page"] = "none"  # another page: the radio is not drawn, Streamlit forgets its value
    at.run()
    at.session_state["page"] = "a"
    at.run()
    assert at.radio(key="a_source").value == "JSONL"
    at.session_state["page"] = "b"  # another page's widget with the same name shows the same value
    at.run()
    assert at.radio(key="b_source").value == "JSONL"
    at.radio(key="b_source").set_value("Paste").run()
    at.session_state["page"] = "c"
    at.run()
    assert at.radio(key="c_only_demo").value == "Demo" and at.radio(key="c_source").value == "Paste"
    at.session_state["page"] = "a"  # "Paste" is not an option here: the default, and the session still says Paste
    at.run()
    assert at.radio(key="a_source").value == "Demo"
    at.session_state["page"] = "b"
    at.run()
    assert at.radio(key="b_source").value == "Paste"


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


@pytest.mark.parametrize(
    "name, value",
    [
        ("SPACY_CONTEXTUAL_ELMO_MODEL", "~nosuchuser-of-these-tests\x01"),
        ("SPACY_CONTEXTUAL_PIPELINE", "~nosuchuser-of-these-tests/run"),
        ("SPACY_CONTEXTUAL_SENSE_DATA", "x" * 5000),
    ],
)
def test_a_bad_setting_stops_the_page_with_its_one_line(monkeypatch, name, value):
    """The dashboard's variables are read through ``environment`` too: a bad one is shown, never a traceback."""

    def page():
        from spacy_contextual import environment
        from spacy_contextual.dashboard.page_setup import setting

        for variable in environment.VARIABLES.values():
            if variable.name.endswith(("_MODEL", "_PIPELINE", "_SENSE_DATA")):
                setting(variable)

    monkeypatch.setenv(name, value)
    at = AppTest.from_function(page).run()
    assert not at.exception and len(at.error) == 1 and at.error[0].value.startswith(f"{name}")


def test_a_chart_title_names_a_model_briefly():
    from spacy_contextual.dashboard.labels import MODEL_LABEL_CHARS, model_label

    assert model_label("default") == "default" and model_label("elmo-small") == "elmo-small"
    assert model_label("/tmp/pytest-of-root/pytest-218/models2/elmo") == "…/elmo"
    assert model_label("./my_elmo") == "…/my_elmo"
    long = model_label("/data/" + "a_very_long_folder_name_for_a_model")
    assert len(long) == MODEL_LABEL_CHARS and long.startswith("…/a_very") and long.endswith("…")
