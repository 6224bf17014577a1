"""The dashboard's model field takes catalog names like every other model argument: the first use
fetches (from a loopback server here), and an uncached name while offline is a status message on the
home page, not a crash."""

import pytest
from model_server import ModelServer, write_catalog
from streamlit.testing.v1 import AppTest
from util import DATA, REPO, tiny_elmo_dir

APP = REPO / "app"
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def named_model(tmp_path, monkeypatch):
    with ModelServer() as server:
        model = tiny_elmo_dir(tmp_path / "served")
        files = {p.name: {"url": server.add(f"ours/{p.name}", p.read_bytes())} for p in model.iterdir()}
        catalog = write_catalog(
            tmp_path / "ours.json", {"ours": {"encoder": "elmo", "format": "model_dir", "files": files}}
        )
        monkeypatch.setenv("SPACY_CONTEXTUAL_CATALOG", str(catalog))
        monkeypatch.setenv("SPACY_CONTEXTUAL_HOME", str(tmp_path / "cache"))
        monkeypatch.delenv("SPACY_CONTEXTUAL_OFFLINE", raising=False)
        monkeypatch.setenv("SPACY_CONTEXTUAL_ELMO_MODEL", "ours")
        monkeypatch.setenv("SPACY_CONTEXTUAL_SENSE_DATA", str(DATA / "senses"))
        yield server, tmp_path / "cache" / "ours"


def test_a_catalog_name_in_the_model_field_is_fetched_and_used(named_model):
    import streamlit as st

    from spacy_contextual.dashboard.encoder_choice import cached_encoder

    st.cache_resource.clear()
    server, directory = named_model
    encoder = cached_encoder("elmo", "ours")  # what every page does with the sidebar's model field
    assert encoder.embed_sentences([["The", "bank", "."]])[0].shape[:2] == (3, 3)
    assert server.requests["ours/model.safetensors"] == 1 and (directory / "model.safetensors").is_file()
    st.cache_resource.clear()


def test_an_uncached_name_offline_is_a_status_message_on_the_home_page(named_model, monkeypatch):
    server, _ = named_model
    monkeypatch.setenv("SPACY_CONTEXTUAL_OFFLINE", "1")
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    status = at.dataframe[0].value.set_index("encoder").loc["elmo", "status"]
    assert "SPACY_CONTEXTUAL_OFFLINE=1 forbids downloading" in status and "spacy-contextual download ours" in status
    assert server.requests == {}
