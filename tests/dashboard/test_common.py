"""What the pages share: context keys, widgets kept across pages, the progress bar of a long embedding."""

from streamlit.testing.v1 import AppTest

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
