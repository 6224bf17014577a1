"""The dashboard on an ELMoForManyLangs model directory, as published (pickles and dictionaries)."""

import pytest
from streamlit.testing.v1 import AppTest
from util import DATA, MANYLANGS_FIXTURE, REPO

MODEL = MANYLANGS_FIXTURE / "model"


@pytest.fixture
def manylangs_model(monkeypatch, tmp_path):
    monkeypatch.setenv("SPACY_CONTEXTUAL_ELMO_MODEL", str(MODEL))
    monkeypatch.setenv("SPACY_CONTEXTUAL_SENSE_DATA", str(DATA / "senses"))
    monkeypatch.delenv("SPACY_CONTEXTUAL_PIPELINE", raising=False)


def run_page(name: str) -> AppTest:
    at = AppTest.from_file(str(REPO / "app" / name), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.timeout(300)
def test_home_and_sense_explorer_use_the_model(manylangs_model):
    table = run_page("Home.py").dataframe[0].value.set_index("encoder")
    assert table.loc["elmo", "model"] == str(MODEL) and table.loc["elmo", "status"] == "found"
    at = run_page("pages/1_Sense_explorer.py")
    charts = {chart.key for chart in at.get("plotly_chart")}
    assert "sense_chart" in charts
