"""The Streamlit pages, run headless with streamlit.testing's AppTest on tiny models built here (the
layer probe also on the bundled Senseval files). A click on a chart is sent as the selection state the
browser would send."""

import base64
import json
import re

import numpy as np
import pytest
import streamlit as st
import torch
import util as app_models
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest
from util import DATA, REPO

APP = REPO / "app"
TIMEOUT = 120
SENSES = DATA / "senses"


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
def models(monkeypatch, tiny_elmo_dir, tiny_cove_dir):
    monkeypatch.setenv("SPACY_CONTEXTUAL_ELMO_MODEL", str(tiny_elmo_dir))
    monkeypatch.setenv("SPACY_CONTEXTUAL_COVE_MODEL", str(tiny_cove_dir))
    monkeypatch.setenv("SPACY_CONTEXTUAL_SENSE_DATA", str(SENSES))
    monkeypatch.delenv("SPACY_CONTEXTUAL_PIPELINE", raising=False)


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def run_page(name: str, **state) -> AppTest:
    at = AppTest.from_file(str(APP / name), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    return ok(at.run())


def chart_keys(at: AppTest) -> set:
    return {chart.key for chart in at.get("plotly_chart")}


def figure(at: AppTest, key: str) -> dict:
    return json.loads(next(chart for chart in at.get("plotly_chart") if chart.key == key).proto.spec)


def array(value) -> np.ndarray:
    """A plotly JSON array, plain or typed ({"dtype", "bdata", "shape"})."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return flat.reshape([int(n) for n in value["shape"].split(",")]) if "shape" in value else flat
    return np.asarray(value)


def trace_names(at: AppTest, key: str) -> list[str]:
    return [trace.get("name") for trace in figure(at, key)["data"]]


def keyed(widgets, name: str):
    """The widget keyed ``name``, or ``name`` keyed on its context (``text_inputs.context_key``)."""
    return next(w for w in widgets if w.key == name or re.fullmatch(f"{name}_[0-9a-f]{{10}}", w.key or ""))


def kwic_tables(at: AppTest) -> list[str]:
    """The KWIC tables of the page (not its style sheet): the linked neighbour list's, then the others."""
    linked = [json.loads(e.proto.json)["html"] for e in at.get("bidi_component")]
    return [body for body in linked + [e.proto.body for e in at.get("html")] if "<table class='kwic'>" in body]


def messages(at: AppTest) -> str:
    return " ".join(e.value for e in [*at.error, *at.warning, *at.info])


def click_chart(at: AppTest, key: str, customdata: list) -> AppTest:
    """Rerun as after a click on the point with ``customdata`` of chart ``key`` (the browser's selection state)."""
    chart = next(chart for chart in at.get("plotly_chart") if chart.key == key)
    states = at._tree.get_widget_states()
    selection = {"selection": {"points": [{"customdata": customdata}], "point_indices": [0], "box": [], "lasso": []}}
    states.widgets.append(WidgetState(id=chart.proto.id, string_value=json.dumps(selection)))
    return ok(at._run(states))


def test_home_lists_the_models_and_the_pages(models, tiny_elmo_dir):
    at = run_page("Home.py")
    table = at.dataframe[0].value
    assert table.set_index("encoder").loc["elmo", "model"] == str(tiny_elmo_dir)
    assert (table["status"] == "found").all()
    assert "Compare models" in at.markdown[0].value


def test_sense_explorer_draws_at_once_and_a_changed_layer_keeps_a_chart(models):
    at = run_page("pages/1_Sense_explorer.py")
    assert "sense_chart" in chart_keys(at)  # no button to press: PCA re-projects live
    spec = figure(at, "sense_chart")
    assert "% of variance" in spec["layout"]["xaxis"]["title"]["text"]
    assert spec["layout"]["title"]["text"].startswith("LSTM-2")
    for layer, title in ((1, "LSTM-1"), ("mix", "mix (uniform)")):
        ok(keyed(at.selectbox, "sense_layer").set_value(layer).run())
        assert figure(at, "sense_chart")["layout"]["title"]["text"].startswith(title)
    ok(keyed(at.selectbox, "sense_layer").set_value(0).run())  # type-level: one labelled point per word form
    forms = figure(at, "sense_forms_chart")["data"][0]
    assert forms["text"] == ["play ×20"]
    ok(keyed(at.selectbox, "sense_layer").set_value(2).run())
    ok(at.radio(key="sense_projection").set_value("umap").run())  # on demand: PCA until the button
    assert (
        "computed on demand" in messages(at) and "PC1" in figure(at, "sense_chart")["layout"]["xaxis"]["title"]["text"]
    )
    assert re.search(r"about \d+ s for 20 occurrences on this machine", messages(at))  # said before it is slow
    ok(at.button(key="sense_umap").click().run())
    assert figure(at, "sense_chart")["layout"]["xaxis"]["title"]["text"].startswith("UMAP 1")
    ok(keyed(at.radio, "sense_color").set_value("cluster").run())  # cached: still UMAP, no button
    assert figure(at, "sense_chart")["layout"]["xaxis"]["title"]["text"].startswith("UMAP 1")


def test_a_click_marks_the_occurrence_and_its_neighbours_beside_the_kwic_lines(models):
    at = run_page("pages/1_Sense_explorer.py")
    click_chart(at, "sense_chart", [7, "", "play-sport", "play"])
    assert keyed(at.selectbox, "sense_query").value == 7
    names = trace_names(at, "sense_chart")
    assert "selected #7" in names and "10 nearest neighbours" in names
    rings = next(t for t in figure(at, "sense_chart")["data"] if t["name"] == "10 nearest neighbours")
    assert len(array(rings["x"])) == 10
    kwic = kwic_tables(at)[0]
    assert kwic.count("<tr data-occurrence=") == 10 and "class='word'>play<" in kwic
    assert any("same-sense precision@10" in m.value for m in at.markdown)
    ok(at.slider(key="sense_neighbours").set_value(3).run())  # the kept selection does not undo the choice
    assert "3 nearest neighbours" in trace_names(at, "sense_chart") and keyed(at.selectbox, "sense_query").value == 7
    ok(keyed(at.selectbox, "sense_query").set_value(2).run())
    assert "selected #2" in trace_names(at, "sense_chart")


def test_view_options_recompute_nothing(models, monkeypatch):
    from spacy_contextual.dashboard import sense_explorer

    calls = {"embed": 0, "project": 0, "cluster": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder

    monkeypatch.setattr(ElmoEmbedder, "embed_sentences", counted("embed", ElmoEmbedder.embed_sentences))
    monkeypatch.setattr(sense_explorer, "project", counted("project", sense_explorer.project))
    monkeypatch.setattr(sense_explorer, "cluster", counted("cluster", sense_explorer.cluster))
    text = " ".join(f"Sentence {i} says that we play {'chess' if i % 2 else 'music'} on day {i}." for i in range(9))
    at = run_page("pages/1_Sense_explorer.py", sense_source="Paste text", sense_text=text)
    assert at.text_input(key="sense_word").value == "sentence"  # the most frequent word of the text
    assert calls["embed"] == 1 and calls["project"] > 0 and calls["cluster"] > 0  # a corpus no other test uses
    ok(at.text_input(key="sense_word").set_value("play").run())
    assert calls["embed"] == 2
    before = dict(calls)
    ok(keyed(at.radio, "sense_color").set_value("form").run())
    ok(at.slider(key="sense_neighbours").set_value(4).run())
    ok(keyed(at.selectbox, "sense_query").set_value(3).run())
    click_chart(at, "sense_chart", [5, "", "", "play"])
    assert calls == before
    ok(keyed(at.selectbox, "sense_layer").set_value(1).run())  # a new layer is new data
    assert calls["project"] > before["project"] and calls["embed"] == 2


def test_every_layer_side_by_side_with_its_purity(models):
    at = run_page("pages/1_Sense_explorer.py")
    titles = [a["text"] for a in figure(at, "sense_multiples")["layout"]["annotations"]]
    names = ["char-CNN (type-level)", "LSTM-1", "LSTM-2", "mix (uniform)"]
    assert titles[:4] == [f"<b>{name}</b>" for name in names]
    scores = at.dataframe[0].value  # the scores: one small table
    assert list(scores["layer"]) == names and (scores["majority sense"] == 0.3).all()  # play-theatre: 6 of 20
    assert list(scores["score"]) == ["word form alone", "5-NN purity", "5-NN purity", "5-NN purity"]
    assert scores["value"].iloc[0] == pytest.approx(0.3)  # one form: the form alone says the majority sense
    assert any("held-out instances by the nearest sense centroid" in c.value for c in at.caption)
    assert any("In plain words: **5-NN purity**" in c.value and "Silhouette" in c.value for c in at.caption)
    ok(keyed(at.selectbox, "sense_mix").set_value("learned by the EWT tagger").run())  # the shipped mixes
    titles = [a["text"] for a in figure(at, "sense_multiples")["layout"]["annotations"]]
    assert titles[3] == "<b>mix (learned by the EWT tagger)</b>"


def test_word_forms_colour_and_the_type_level_view(models, tmp_path):
    records = [("serve", "SERVE10")] * 6 + [("served", "SERVE12")] * 4 + [("serves", "SERVE10")] * 3
    path = tmp_path / "serve.jsonl"
    path.write_text(
        "".join(
            json.dumps({"tokens": ["they", form, f"item{i}", "today"], "target": 1, "sense": sense, "word": "serve"})
            + "\n"
            for i, (form, sense) in enumerate(records)
        )
    )
    at = run_page(
        "pages/1_Sense_explorer.py",
        sense_source="Sense-labelled JSONL",
        sense_jsonl_file="other path…",
        sense_jsonl_path=str(path),
    )
    assert at.text_input(key="sense_word").value == "serve"
    ok(keyed(at.radio, "sense_color").set_value("form").run())
    assert set(trace_names(at, "sense_chart")) >= {"serve", "served", "serves"}
    ok(keyed(at.selectbox, "sense_layer").set_value(0).run())
    forms = figure(at, "sense_forms_chart")["data"][0]
    assert forms["text"] == ["serve ×6", "served ×4", "serves ×3"]
    assert "SERVE12 4" in forms["customdata"][1][2]


def test_weak_clusters_get_an_honest_note(models):
    at = run_page("pages/1_Sense_explorer.py")
    ok(at.checkbox(key="sense_auto_k").uncheck().run())
    ok(at.slider(key="sense_k").set_value(6).run())
    assert "cluster structure" in messages(at) and "silhouette" in messages(at)
    assert any("do not read them as discovered senses" in w.value for w in at.warning) or any(
        "strong" in c.value or "reasonable" in c.value for c in at.caption
    )


def test_pasted_text_starts_with_a_hint_and_suggests_words(models):
    at = run_page("pages/1_Sense_explorer.py", sense_source="Paste text")
    assert not at.error and "Paste some English text" in messages(at)
    text = "The bank was closed. I walked to the bank. The bank opened late. Rivers flood. Rivers dry."
    ok(at.text_area(key="sense_text").set_value(text).run())
    pills = at.button_group(key="sense_suggestion")
    assert pills.options[0] == "bank" and at.text_input(key="sense_word").value == "bank"
    assert "sense_chart" in chart_keys(at)


def test_search_is_lemma_aware_or_says_why_not(models, monkeypatch):
    from spacy_contextual.analysis import lemmas

    text = "She runs fast. He ran home. They run a shop. We run daily."
    if lemmas.english_lemmatizer() is not None:
        at = run_page("pages/1_Sense_explorer.py", sense_source="Paste text", sense_text=text)
        ok(at.text_input(key="sense_word").set_value("run").run())
        assert "forms: " in at.caption[0].value
        assert all(form in at.caption[0].value for form in ("runs", "ran", "run"))
    monkeypatch.setattr(lemmas, "english_lemmatizer", lambda: None)
    at = run_page("pages/1_Sense_explorer.py", sense_source="Paste text", sense_text=text)
    ok(at.text_input(key="sense_word").set_value("run, runs, ran").run())  # several forms by hand
    assert any("No English lemmatizer" in c.value for c in at.caption)
    assert "4 occurrences" in at.caption[0].value


def test_sentence_level_neighbours_come_from_any_word(models):
    at = run_page("pages/1_Sense_explorer.py")
    ok(at.toggle(key="sense_corpus_search").set_value(True).run())
    assert any("tokens of all 62 sentences" in c.value for c in at.caption)
    ok(at.checkbox(key="sense_other_words").check().run())
    corpus_hits = kwic_tables(at)[-1]
    assert corpus_hits.count("<tr>") == 10 and "class='word'>play<" not in corpus_hits
    assert at.get("download_button")


def test_sense_explorer_with_cove(models):
    at = run_page("pages/1_Sense_explorer.py", sense_encoder="cove")
    assert "sense_chart" in chart_keys(at)
    assert figure(at, "sense_multiples")["layout"]["annotations"][0]["text"].startswith("<b>GloVe (type-level)</b>")


@pytest.mark.parametrize(
    "source, text, word, expected",
    [
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
    ok(at.run())
    if word is not None:
        ok(at.text_input(key="sense_word").set_value(word).run())
    assert expected in messages(at)


@pytest.mark.parametrize("name", ["hard.jsonl.gz", "serve.jsonl.gz"])
def test_probe_on_the_bundled_sense_files_is_stratified(models, name):
    at = run_page("pages/4_Layer_probe.py", probe_source="Sense-labelled JSONL", probe_jsonl_file=str(SENSES / name))
    ok(at.button(key="probe_run").click().run())
    assert not at.warning, [w.value for w in at.warning]
    table, words = at.dataframe[0].value, at.dataframe[1].value.iloc[0]
    assert words["instances"].startswith("400 of ") and any("Senses sampled: " in c.value for c in at.caption)
    baseline = table[table["layer"] == "MFS baseline"].iloc[0]
    share = words["majority share"]
    assert baseline["accuracy"] >= share - 1 / 400 and share < 0.85  # not a one-sense sample
    assert list(table["layer"].unique()) == ["char-CNN (type-level)", "LSTM-1", "LSTM-2", "MFS baseline"]
    bars = [trace for trace in figure(at, "probe_chart")["data"] if trace["type"] == "bar"]
    assert (
        all(len(array(bar["error_y"]["array"])) == 1 for bar in bars) and bars[0]["marker"]["pattern"]["shape"] == "/"
    )
    assert at.button(key="probe_run").label.endswith(f"({words['instances']} instances)")
    assert words["word form alone"] >= share - 0.05  # a word form alone does at least about the majority


def test_probe_warns_about_thin_senses_and_names_cove_layers(models):
    at = run_page("pages/4_Layer_probe.py")
    ok(at.button(key="probe_run").click().run())
    shown = [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning]  # as markdown shows the escaped text
    assert any("'play': play-game (4) has fewer than 5 instances" in text for text in shown)
    assert set(at.dataframe[0].value["word"]) == {"bank", "bat", "play", "spring"}
    at = run_page("pages/4_Layer_probe.py", probe_encoder="cove")
    ok(at.button(key="probe_run").click().run())
    assert list(at.dataframe[0].value["layer"].unique())[:3] == ["GloVe (type-level)", "CoVe-1", "CoVe-2"]


def test_clicking_a_probe_bar_opens_the_word_in_the_sense_explorer(models):
    at = ok(AppTest.from_file(str(APP / "Home.py"), default_timeout=TIMEOUT).run())
    ok(at.switch_page("pages/4_Layer_probe.py").run())
    ok(at.button(key="probe_run").click().run())
    click_chart(at, "probe_chart", ["bank", 1])
    assert at.title[0].value == "Sense explorer"
    assert at.text_input(key="sense_word").value == "bank" and keyed(at.selectbox, "sense_layer").value == 1
    assert figure(at, "sense_chart")["layout"]["title"]["text"].startswith("LSTM-1: 14 occurrences")


def test_compare_page_aligns_two_models_and_lists_the_changed_neighbourhoods(models):
    at = run_page("pages/5_Compare_models.py")
    assert {"compare_chart_a", "compare_chart_b"} <= chart_keys(at)
    assert figure(at, "compare_chart_b")["layout"]["title"]["text"].startswith("B: cove")
    table = next(e.proto.body for e in at.get("html") if "<table class='change'>" in e.proto.body)
    overlaps = [float(x) for x in re.findall(r"class='num overlap'>([0-9.]+)<", table)]
    assert overlaps == sorted(overlaps) and all(0 <= x <= 1 for x in overlaps) and len(overlaps) == 20
    most_changed = int(re.search(r"<td class='num'>#(\d+)</td>", table).group(1))
    assert keyed(at.selectbox, "compare_query").value == most_changed  # starts at the most changed
    click_chart(at, "compare_chart_a", [4, "", "", "play"])
    spec_a, spec_b = figure(at, "compare_chart_a"), figure(at, "compare_chart_b")
    assert spec_a["layout"]["xaxis"]["range"] == spec_b["layout"]["xaxis"]["range"]  # one scale for both models
    assert spec_a["layout"]["yaxis"]["range"] == spec_b["layout"]["yaxis"]["range"]
    for spec in (spec_a, spec_b):  # linked: the same occurrence marked in both, its neighbours as shared/gained/lost
        names = [trace["name"] for trace in spec["data"]]
        assert "selected #4" in names
        groups = {n.split(" ", 1)[1]: int(n.split(" ")[0]) for n in names if n.endswith(("shared", "only)"))}
        assert groups.get("shared", 0) + groups.get("lost (A only)", 0) == 10  # A's 10 neighbours
        assert groups.get("shared", 0) + groups.get("gained (B only)", 0) == 10  # B's 10 neighbours
    ok(at.slider(key="compare_k").set_value(5).run())
    names = trace_names(at, "compare_chart_b")
    counts = [int(n.split(" ")[0]) for n in names if n.endswith("shared") or n.endswith("(A only)")]
    assert sum(counts) == 5 and "Mean neighbour overlap" in at.markdown[1].value
    assert any("one scale" in c.value for c in at.caption)


def test_cove_attention_can_be_audited_and_exported(models):
    at = run_page("pages/3_CoVe_attention.py")
    assert "Training domain of this model" in messages(at)
    data = figure(at, "attention_chart")["data"]
    assert [trace["type"] for trace in data][:3] == ["heatmap", "bar", "bar"]
    np.testing.assert_allclose(array(data[1]["y"]), array(data[0]["z"]).sum(axis=0), rtol=1e-5)  # coverage = Σ_t α
    np.testing.assert_allclose(array(data[2]["x"]), array(data[0]["z"]).max(axis=1), rtol=1e-5)  # each row's peak
    assert any("Attention rows: largest weight" in c.value for c in at.caption)
    assert figure(at, "attention_chart")["layout"]["xaxis2"]["tickfont"]["size"] >= 14
    assert at.get("download_button")[0].proto.label == "Download this view (heatmap) as standalone HTML"
    ok(at.text_input(key="attention_sentence").set_value("A man plays the zyxophone.").run())
    assert "Out of the model's vocabulary" in messages(at) and "'zyxophone'" in messages(at)
    assert any("⚠ OOV" in tick for tick in figure(at, "attention_chart")["layout"]["xaxis2"]["ticktext"])
    ok(at.radio(key="attention_view").set_value("lines").run())
    frame = at.get("iframe")[0].proto.srcdoc
    assert frame.startswith("<!DOCTYPE html>") and "zyxophone ⚠ OOV" in frame and "<line class='a'" in frame
    assert at.get("download_button")[0].proto.label == "Download this view (lines) as standalone HTML"
    ok(at.text_input(key="attention_sentence").set_value("a man " * 100).run())
    assert "the limit is" in messages(at) and not at.get("plotly_chart")


def test_layer_weights_shows_the_shipped_example_until_a_pipeline_is_given(models, tiny_pipeline_dir):
    at = run_page("pages/2_Layer_weights.py")
    assert "shipped example" in messages(at)
    spec = figure(at, "weights_chart")
    assert spec["data"][0]["x"] == ["char-CNN", "LSTM-1", "LSTM-2"]
    assert [shape["y0"] for shape in spec["layout"]["shapes"]] == pytest.approx([1 / 3])  # the uniform mix
    assert spec["layout"]["xaxis"]["tickangle"] == 0
    assert set(at.dataframe[0].value["component"]) == {"tagger", "morphologizer"}
    ok(at.text_area(key="weights_paths").set_value(str(tiny_pipeline_dir)).run())
    assert "shipped example" not in messages(at)
    table = at.dataframe[0].value
    tagger = table[table.component == "tagger"]
    assert list(tagger["label"]) == ["char-CNN", "LSTM-1", "LSTM-2"]
    s, gamma = app_models.TAGGER_MIX
    assert tagger["gamma"].iloc[0] == pytest.approx(gamma)
    assert tagger["weight"].to_numpy() == pytest.approx(torch.softmax(torch.tensor(s), 0).numpy(), rel=1e-5)


def test_layer_weights_compares_pipelines_side_by_side(models, tiny_pipeline_dir, tmp_path):
    import shutil

    other = shutil.copytree(tiny_pipeline_dir, tmp_path / "textcat_run" / "model-best")
    at = run_page("pages/2_Layer_weights.py")
    ok(at.text_area(key="weights_paths").set_value(f"{tiny_pipeline_dir}\n{other}\n{tmp_path}").run())
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
    ok(at.text_area(key="weights_paths").set_value(str(tmp_path)).run())
    assert "is not a spaCy pipeline directory" in messages(at)
    spacy.blank("en").to_disk(tmp_path / "blank")
    ok(at.text_area(key="weights_paths").set_value(str(tmp_path / "blank")).run())
    assert "has no component with a layer mix" in messages(at)


def test_installed_entry_point_runs_every_page(models):
    at = ok(AppTest.from_file(str(REPO / "spacy_contextual/dashboard/main.py"), default_timeout=TIMEOUT).run())
    assert at.title[0].value == "spacy-contextual dashboard"
    from spacy_contextual.dashboard import page_links

    assert set(page_links.PAGES) == set(page_links.PAGE_FILES) | {"home"}


def test_pages_without_any_model_say_what_to_do(monkeypatch, tmp_path):
    from spacy_contextual.hub import resolver

    for variable in ("SPACY_CONTEXTUAL_ELMO_MODEL", "SPACY_CONTEXTUAL_COVE_MODEL", "SPACY_CONTEXTUAL_PIPELINE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(resolver, "ASSETS", tmp_path)  # an installation without its bundled models
    st.cache_resource.clear()  # models that earlier pages of this process loaded would answer instead
    st.cache_data.clear()
    at = run_page("pages/1_Sense_explorer.py")
    assert "the bundled ELMo model is missing" in messages(at)
    at = run_page("pages/3_CoVe_attention.py")
    assert "the bundled CoVe model is missing" in messages(at)
    at = run_page("pages/5_Compare_models.py")
    assert "the bundled ELMo model is missing" in messages(at)


def test_uploaded_files_become_corpora():
    import gzip

    from spacy_contextual.analysis.occurrences import InputError
    from spacy_contextual.dashboard.corpus_picker import MAX_UPLOAD_BYTES, UPLOAD, load_corpus

    records, digest = load_corpus(UPLOAD, b"They play. We play.\n\nA play!", "notes.txt")
    assert [r["tokens"] for r in records] == [["They", "play", "."], ["We", "play", "."], ["A", "play", "!"]]
    line = json.dumps({"tokens": ["a", "hard", "task"], "target": 1, "sense": "HARD1", "word": "hard"}) + "\n"
    labelled, other = load_corpus(UPLOAD, gzip.compress(line.encode()), "hard.jsonl.gz")
    assert labelled[0]["sense"] == "HARD1" and other != digest
    with pytest.raises(InputError, match="the limit is"):
        load_corpus(UPLOAD, b"x" * (MAX_UPLOAD_BYTES + 1), "big.txt")


def test_a_new_word_or_encoder_never_keeps_a_value_from_the_old_one(models):
    at = run_page("pages/1_Sense_explorer.py")
    ok(keyed(at.selectbox, "sense_query").set_value(12).run())
    assert "Can you play" in keyed(at.selectbox, "sense_query").format_func(12)
    ok(at.text_input(key="sense_word").set_value("bank").run())
    query = keyed(at.selectbox, "sense_query")
    assert query.value == 0 and "bank" in query.format_func(0).lower()
    assert any(m.value.startswith("Query #0") for m in at.markdown)
    ok(keyed(at.selectbox, "sense_layer").set_value(1).run())
    ok(at.radio(key="sense_encoder").set_value("cove").run())
    layer = keyed(at.selectbox, "sense_layer")
    assert layer.format_func(layer.value) == "CoVe-1"  # the layer by position: LSTM-1 is CoVe-1
    assert figure(at, "sense_chart")["layout"]["title"]["text"].startswith("CoVe-1")
    ok(keyed(at.selectbox, "sense_layer").set_value(0).run())
    ok(at.radio(key="sense_encoder").set_value("elmo").run())
    layer = keyed(at.selectbox, "sense_layer")
    assert layer.format_func(layer.value) == "char-CNN (type-level)" and "sense_forms_chart" in chart_keys(at)


def test_the_probe_keeps_its_corpus_and_results_and_opens_the_explorer_on_its_sample(models, monkeypatch):
    from spacy_contextual.dashboard import page_links
    from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder

    monkeypatch.setattr(
        page_links, "PAGES", {}
    )  # the file-based app (the entry point's test registers st.Page objects)
    embedded = []  # sentences embedded (a store made earlier in this process may hold some already)
    original = ElmoEmbedder.embed_sentences
    monkeypatch.setattr(ElmoEmbedder, "embed_sentences", lambda self, s: embedded.append(len(s)) or original(self, s))
    at = ok(AppTest.from_file(str(APP / "Home.py"), default_timeout=TIMEOUT).run())
    ok(at.switch_page("pages/4_Layer_probe.py").run())
    ok(at.radio(key="probe_source").set_value("Sense-labelled JSONL").run())
    ok(at.selectbox(key="probe_jsonl_file").set_value(str(SENSES / "hard.jsonl.gz")).run())
    ok(at.number_input(key="probe_max").set_value(40).run())
    assert at.button(key="probe_run").label == "Run the probe on 1 word (40 of 4,333 instances)"
    ok(at.button(key="probe_run").click().run())
    ok(at.switch_page("Home.py").run())
    ok(at.switch_page("pages/4_Layer_probe.py").run())  # back: the same corpus, settings and results
    assert at.radio(key="probe_source").value == "Sense-labelled JSONL" and at.number_input(key="probe_max").value == 40
    assert "probe_chart" in chart_keys(at) and at.dataframe[1].value["instances"].iloc[0] == "40 of 4,333"
    before = sum(embedded)
    click_chart(at, "probe_chart", ["hard", 2])
    assert at.title[0].value == "Sense explorer" and sum(embedded) == before  # the probe's vectors, from the store
    assert "The Layer probe's sample: 40 of the 4,333 occurrences" in messages(at)
    assert figure(at, "sense_chart")["layout"]["title"]["text"].startswith("LSTM-2: 40 occurrences")
    ok(at.switch_page("pages/1_Sense_explorer.py").run())  # AppTest stays on the page it ran: follow the switch
    assert figure(at, "sense_chart")["layout"]["title"]["text"].startswith("LSTM-2: 40 occurrences")
    ok(at.button(key="sense_all").click().run())
    said = r"about [\d a-z]+ for ([\d,]+) sentences \([\d,]+ tokens\) on this machine \([\d.]+ ms a token"
    estimate = re.search(said, messages(at))
    assert estimate and "sense_chart" not in chart_keys(at)  # said before it is slow: a button to start
    ok(at.button(key="sense_embed").click().run())
    assert figure(at, "sense_chart")["layout"]["title"]["text"].startswith("LSTM-2: 4,333 occurrences")
    assert 0 < sum(embedded) - before <= 4333 - 40  # only what the store did not hold


def test_one_session_state_across_pages(models, monkeypatch):
    """The word, the occurrence chosen per word, the layer, the corpus and the attention sentence are
    where the user left them after another page, and the word is the same on every page that has one."""
    from spacy_contextual.dashboard import page_links

    monkeypatch.setattr(
        page_links, "PAGES", {}
    )  # the file-based app (the entry point's test registers st.Page objects)
    at = ok(AppTest.from_file(str(APP / "Home.py"), default_timeout=TIMEOUT).run())
    ok(at.switch_page("pages/1_Sense_explorer.py").run())
    ok(at.text_input(key="sense_word").set_value("bank").run())
    ok(keyed(at.selectbox, "sense_query").set_value(3).run())
    ok(keyed(at.selectbox, "sense_layer").set_value(1).run())
    ok(at.switch_page("pages/4_Layer_probe.py").run())
    ok(at.switch_page("pages/1_Sense_explorer.py").run())
    assert at.text_input(key="sense_word").value == "bank" and not at.error
    assert keyed(at.selectbox, "sense_query").value == 3 and keyed(at.selectbox, "sense_layer").value == 1
    assert figure(at, "sense_chart")["layout"]["title"]["text"].startswith("LSTM-1: 14 occurrences")
    ok(at.text_input(key="sense_word").set_value("play").run())  # another word: its own occurrence, not #3
    assert keyed(at.selectbox, "sense_query").value == 0
    ok(at.text_input(key="sense_word").set_value("bank").run())  # back: bank's occurrence again
    assert keyed(at.selectbox, "sense_query").value == 3

    ok(at.switch_page("pages/5_Compare_models.py").run())  # one word, one chosen occurrence, for every page
    assert at.text_input(key="compare_word").value == "bank" and keyed(at.selectbox, "compare_query").value == 3
    ok(at.text_input(key="compare_word").set_value("bat").run())
    ok(at.switch_page("pages/1_Sense_explorer.py").run())
    assert at.text_input(key="sense_word").value == "bat"

    ok(at.switch_page("pages/3_CoVe_attention.py").run())
    ok(at.text_input(key="attention_sentence").set_value("A **dog** runs .").run())
    assert "\\*\\*" in messages(at) or "**dog**" not in messages(at)  # markdown typed is shown as typed
    ok(at.radio(key="attention_view").set_value("lines").run())
    ok(at.switch_page("pages/2_Layer_weights.py").run())
    ok(at.switch_page("pages/3_CoVe_attention.py").run())
    assert at.text_input(key="attention_sentence").value == "A **dog** runs ." and at.get("iframe")

    ok(at.switch_page("pages/1_Sense_explorer.py").run())  # the corpus: pasted text, for the probe's pages too
    ok(at.radio(key="sense_source").set_value("Paste text").run())
    ok(at.text_area(key="sense_text").set_value("We play chess. They play music. I play often.").run())
    ok(at.switch_page("pages/5_Compare_models.py").run())
    assert at.radio(key="compare_source").value == "Paste text" and at.text_input(key="compare_word").value == "play"
    ok(at.switch_page("pages/4_Layer_probe.py").run())  # the probe has no pasted text: its own default, once
    assert at.radio(key="probe_source").value == "Demo sentences"
    ok(at.switch_page("pages/1_Sense_explorer.py").run())
    assert at.radio(key="sense_source").value == "Paste text" and "3 occurrences" in at.caption[0].value


def test_the_probe_has_a_button_to_open_the_sense_explorer(models, monkeypatch):
    from spacy_contextual.dashboard import page_links

    monkeypatch.setattr(page_links, "PAGES", {})
    at = ok(AppTest.from_file(str(APP / "Home.py"), default_timeout=TIMEOUT).run())
    ok(at.switch_page("pages/4_Layer_probe.py").run())
    ok(at.button(key="probe_run").click().run())
    assert any("In plain words: **MFS**" in c.value for c in at.caption)
    ok(at.selectbox(key="probe_open_word").set_value("spring").run())
    ok(at.selectbox(key="probe_open_layer").set_value(1).run())
    ok(at.button(key="probe_open").click().run())
    assert at.title[0].value == "Sense explorer"
    assert at.text_input(key="sense_word").value == "spring" and keyed(at.selectbox, "sense_layer").value == 1
    assert "The Layer probe's sample" in messages(at)


def test_a_link_opens_the_explorer_in_the_state_it_names_and_the_url_follows_the_page(models):
    """The URL's corpus, word, layer, occurrence and search give a new session that view; the page then keeps
    the URL in step with what is chosen."""
    from spacy_contextual.analysis.occurrences import read_sense_jsonl

    records = read_sense_jsonl(SENSES / "serve.jsonl.gz")
    occurrences = find_occurrences_of(records, "serve")
    chosen = 17
    pair = f"{occurrences['record'].iloc[chosen]}:{occurrences['position'].iloc[chosen]}"
    at = AppTest.from_file(str(APP / "pages/1_Sense_explorer.py"), default_timeout=TIMEOUT)
    at.query_params.update(corpus="serve.jsonl.gz", word="serve", layer="1", occurrence=pair, search="SERVE10",
                           by="sense", n="400")  # fmt: skip
    ok(at.run())
    assert (
        at.radio(key="sense_source").value == "Sense-labelled JSONL"
        and at.text_input(key="sense_word").value == "serve"
    )
    assert keyed(at.selectbox, "sense_layer").value == 1 and at.number_input(key="sense_max").value == 400
    assert keyed(at.selectbox, "sense_query").value == chosen
    assert at.text_input(key="sense_search").value == "SERVE10" and at.selectbox(key="sense_search_by").value == "sense"
    names = trace_names(at, "sense_chart")
    assert f"selected #{chosen}" in names and any(n.endswith("search matches") for n in names)
    assert at.query_params["word"] == "serve" and at.query_params["layer"] == "1"
    assert at.query_params["occurrence"] == pair and at.query_params["corpus"] == "serve.jsonl.gz"
    ok(keyed(at.selectbox, "sense_layer").set_value(2).run())
    assert at.query_params["layer"] == "2"  # the URL follows the page


def find_occurrences_of(records, word):
    from spacy_contextual.analysis.occurrences import find_occurrences
    from spacy_contextual.analysis.sampling import draw

    occurrences = find_occurrences(records, word)
    return occurrences.iloc[draw(occurrences["sense"].tolist(), 400).indices].reset_index(drop=True)


def test_layer_weights_keeps_its_pipelines_across_pages(models, monkeypatch, tmp_path):
    from spacy_contextual.dashboard import page_links

    monkeypatch.setattr(page_links, "PAGES", {})
    at = ok(AppTest.from_file(str(APP / "Home.py"), default_timeout=TIMEOUT).run())
    ok(at.switch_page("pages/2_Layer_weights.py").run())
    ok(at.text_area(key="weights_paths").set_value(str(tmp_path / "no_pipeline")).run())
    assert at.query_params["pipelines"] == str(tmp_path / "no_pipeline")
    ok(at.switch_page("Home.py").run())
    ok(at.switch_page("pages/2_Layer_weights.py").run())
    assert at.text_area(key="weights_paths").value == str(tmp_path / "no_pipeline")  # the session's, not the default
