"""The Streamlit pages, run headless with streamlit.testing's AppTest on tiny models built here."""

import pytest
import torch
import util as app_models
from streamlit.testing.v1 import AppTest
from util import REPO

APP = REPO / "app"
TIMEOUT = 120


@pytest.fixture(scope="session")
def tiny_elmo_dir(tmp_path_factory):
    return app_models.tiny_elmo_dir(tmp_path_factory.mktemp("models") / "elmo")


@pytest.fixture(scope="session")
def tiny_cove_dir(tmp_path_factory):
    return app_models.tiny_cove_mt_dir(tmp_path_factory.mktemp("models") / "cove")


@pytest.fixture(scope="session")
def tiny_pipeline_dir(tiny_elmo_dir, tmp_path_factory):
    return app_models.tiny_listener_pipeline(tiny_elmo_dir, tmp_path_factory.mktemp("pipelines") / "tagger_textcat")


@pytest.fixture
def models(monkeypatch, tiny_elmo_dir, tiny_cove_dir, tiny_pipeline_dir):
    monkeypatch.setenv("SPACY_CONTEXTUAL_ELMO_MODEL", str(tiny_elmo_dir))
    monkeypatch.setenv("SPACY_CONTEXTUAL_COVE_MODEL", str(tiny_cove_dir))
    monkeypatch.setenv("SPACY_CONTEXTUAL_PIPELINE", str(tiny_pipeline_dir))


def run_page(name: str) -> AppTest:
    at = AppTest.from_file(str(APP / name), default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def chart_keys(at: AppTest) -> set:
    return {chart.key for chart in at.get("plotly_chart")}


def messages(at: AppTest) -> str:
    return " ".join(e.value for e in [*at.error, *at.warning, *at.info])


def test_home_lists_the_models(models, tiny_elmo_dir):
    at = run_page("Home.py")
    table = at.dataframe[0].value
    assert table.set_index("encoder").loc["elmo", "model"] == str(tiny_elmo_dir)
    assert (table["status"] == "found").all()


def test_sense_explorer_projects_on_the_button_and_shows_neighbours(models):
    at = run_page("pages/1_Sense_explorer.py")
    assert not at.get("plotly_chart") and "Press **Project with PCA**" in messages(at)
    at.button(key="sense_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert chart_keys(at) == {
        "sense_chart",
        "sense_static_chart",
        "sense_silhouette",
    }  # contextual | static, silhouette by k
    neighbours = [m.value for m in at.markdown if m.value.startswith("1. ")]
    assert neighbours and neighbours[0].count("**play**") == 10
    assert at.get("download_button")
    # another layer and another query occurrence keep the projection request in sync
    at.selectbox(key="sense_query").set_value(3).run()
    assert not at.exception and "sense_chart" in chart_keys(at)
    at.selectbox(key="sense_layer").set_value("mix").run()
    assert not at.exception and "Press **Project" in messages(at)


def test_sense_explorer_with_cove(models):
    at = AppTest.from_file(str(APP / "pages/1_Sense_explorer.py"), default_timeout=TIMEOUT)
    at.session_state["sense_encoder"] = "cove"
    at.run()
    at.button(key="sense_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert {"sense_chart", "sense_static_chart"} <= chart_keys(at)


@pytest.mark.parametrize(
    "source, text, word, expected",
    [
        ("Paste text", "", None, "The text is empty"),
        ("Paste text", "x" * 1_000_000, None, "1,000,000 characters; the limit is 200,000"),
        ("Paste text", "We play. They play. The bank is closed.", "bank", "occurs only 1 time"),
        ("Demo sentences", None, "xyzzy", "'xyzzy' does not occur"),
    ],
)
def test_sense_explorer_bad_input_gets_a_message(models, source, text, word, expected):
    at = AppTest.from_file(str(APP / "pages/1_Sense_explorer.py"), default_timeout=TIMEOUT)
    at.session_state["sense_source"] = source
    if text is not None:
        at.session_state["sense_text"] = text
    at.run()
    if word is not None:
        at.text_input(key="sense_word").set_value(word).run()
    assert not at.exception, [e.value for e in at.exception]
    assert expected in messages(at)


def test_layer_weights_shows_each_listener_mix(models):
    at = run_page("pages/2_Layer_weights.py")
    figure = at.get("plotly_chart")[0].proto.spec
    assert '"name":"tagger"' in figure and '"name":"textcat"' in figure
    table = at.dataframe[0].value
    tagger = table[table.component == "tagger"]
    assert list(tagger["layer"]) == [0, 1, 2]
    s, gamma = app_models.TAGGER_MIX
    assert tagger["gamma"].iloc[0] == pytest.approx(gamma)
    assert tagger["weight"].to_numpy() == pytest.approx(torch.softmax(torch.tensor(s), 0).numpy(), rel=1e-5)


def test_layer_weights_compares_pipelines_side_by_side(models, tiny_pipeline_dir, tmp_path):
    import shutil

    other = shutil.copytree(tiny_pipeline_dir, tmp_path / "textcat_run" / "model-best")
    at = run_page("pages/2_Layer_weights.py")
    at.text_area(key="weights_paths").set_value(f"{tiny_pipeline_dir}\n{other}\n{tmp_path}").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "is not a spaCy pipeline directory" in messages(at)  # the third line, reported; the others drawn
    components = set(at.dataframe[0].value["component"])
    assert components == {
        f"{tiny_pipeline_dir.parent.name}/{tiny_pipeline_dir.name} · tagger",
        f"{tiny_pipeline_dir.parent.name}/{tiny_pipeline_dir.name} · textcat",
        "textcat_run/model-best · tagger",
        "textcat_run/model-best · textcat",
    }
    assert at.get("plotly_chart")


def test_layer_weights_bad_directories(models, tmp_path):
    import spacy

    at = run_page("pages/2_Layer_weights.py")
    at.text_area(key="weights_paths").set_value(str(tmp_path)).run()
    assert not at.exception and "is not a spaCy pipeline directory" in messages(at)
    spacy.blank("en").to_disk(tmp_path / "blank")
    at.text_area(key="weights_paths").set_value(str(tmp_path / "blank")).run()
    assert not at.exception and "has no component with a layer mix" in messages(at)
    at.text_area(key="weights_paths").set_value("").run()
    assert not at.exception and "Enter the directory" in messages(at)


def test_cove_attention_draws_the_heatmap_and_refuses_long_input(models):
    at = run_page("pages/3_CoVe_attention.py")
    heatmap = at.get("plotly_chart")
    assert heatmap and '"type":"heatmap"' in heatmap[0].proto.spec
    assert any(m.value.startswith("**Translation**") for m in at.markdown)
    at.radio(key="attention_decoding").set_value("beam").run()
    assert not at.exception and at.get("plotly_chart")
    at.text_input(key="attention_sentence").set_value("a man " * 100).run()
    assert not at.exception and "the limit is" in messages(at) and not at.get("plotly_chart")


def test_layer_probe_runs_on_the_button(models):
    pytest.importorskip("spacy_contextual.analysis.sense_probe")
    at = run_page("pages/4_Layer_probe.py")
    at.button(key="probe_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.get("plotly_chart")
    assert set(at.dataframe[0].value["word"]) == {"bank", "bat", "play", "spring"}


def test_installed_entry_point_runs(models):
    at = AppTest.from_file(str(REPO / "spacy_contextual/dashboard/main.py"), default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "spacy-contextual dashboard"


def test_pages_without_any_model_say_what_to_do(monkeypatch, tmp_path):
    from spacy_contextual.formats import bundled

    for variable in ("SPACY_CONTEXTUAL_ELMO_MODEL", "SPACY_CONTEXTUAL_COVE_MODEL", "SPACY_CONTEXTUAL_PIPELINE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(bundled, "ASSETS", tmp_path)  # an installation without its bundled models
    at = run_page("pages/1_Sense_explorer.py")
    assert "the bundled elmo model is missing" in messages(at)
    at = run_page("pages/3_CoVe_attention.py")
    assert "the bundled cove model is missing" in messages(at)
    at = run_page("pages/2_Layer_weights.py")
    assert "Enter the directory of a trained spaCy pipeline" in messages(at)


def test_uploaded_files_become_corpora():
    import gzip
    import json

    from spacy_contextual.analysis.occurrences import InputError
    from spacy_contextual.dashboard.corpus_picker import MAX_UPLOAD_BYTES, UPLOAD, load_corpus

    records, digest = load_corpus(UPLOAD, b"They play. We play.\n\nA play!", "notes.txt")
    assert [r["tokens"] for r in records] == [["They", "play", "."], ["We", "play", "."], ["A", "play", "!"]]
    line = json.dumps({"tokens": ["a", "hard", "task"], "target": 1, "sense": "HARD1", "word": "hard"}) + "\n"
    labelled, other = load_corpus(UPLOAD, gzip.compress(line.encode()), "hard.jsonl.gz")
    assert labelled[0]["sense"] == "HARD1" and other != digest
    with pytest.raises(InputError, match="the limit is"):
        load_corpus(UPLOAD, b"x" * (MAX_UPLOAD_BYTES + 1), "big.txt")
