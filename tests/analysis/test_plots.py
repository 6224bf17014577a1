"""Figures and exports: sense scatter, projector TSV, attention heatmap, probe chart."""

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from spacy_contextual.analysis.attention import (
    attention_figure,
    attention_lines_html,
    coverage,
    low_coverage,
    most_repeated_ngram,
    standalone_html,
)
from spacy_contextual.analysis.occurrences import demo_corpus, find_occurrences
from spacy_contextual.analysis.probe_plot import probe_figure, probe_frame
from spacy_contextual.analysis.projector_export import projector_tsv, projector_zip
from spacy_contextual.analysis.sense_plots import (
    point_frame,
    sense_scatter,
    small_multiples,
    snippet,
    word_form_frame,
)


def test_scatter_points_carry_their_occurrence_and_context():
    records = demo_corpus()
    occurrences = find_occurrences(records, "bat")
    coords = np.arange(2 * len(occurrences), dtype=np.float32).reshape(-1, 2)
    clusters = np.array([0, 1] * (len(occurrences) // 2))
    frame = point_frame(records, occurrences, coords, clusters)
    fig = sense_scatter(frame, color="sense")
    assert {trace.name for trace in fig.data} == {"bat-animal", "bat-sport"}
    seen = {}
    for trace in fig.data:
        for (x, y), data in zip(zip(trace.x, trace.y, strict=True), trace.customdata, strict=True):
            seen[int(data[0])] = (x, y, data[2])
    assert sorted(seen) == list(range(len(occurrences)))
    for index, (x, y, sense) in seen.items():  # a clicked point's customdata leads back to its occurrence
        assert (x, y) == tuple(coords[index]) and sense == occurrences["sense"][index]
    assert {trace.name for trace in sense_scatter(frame, "cluster").data} == {"cluster 0", "cluster 1"}
    assert {trace.name for trace in sense_scatter(frame, "form").data} == {"bat"}
    with pytest.raises(ValueError, match="cannot colour by 'colour'"):
        sense_scatter(frame, "colour")


def test_the_selected_occurrence_and_its_neighbours_are_drawn_on_top():
    records = demo_corpus()
    occurrences = find_occurrences(records, "bat")
    coords = np.random.default_rng(0).normal(size=(len(occurrences), 2)).astype(np.float32)
    frame = point_frame(records, occurrences, coords)
    fig = sense_scatter(frame, "sense", "t", ("PC1 (40.0 % of variance)", "PC2"), selected=3, neighbours=[5, 1, 8])
    rings, star = fig.data[-2], fig.data[-1]
    assert rings.name == "3 nearest neighbours" and [int(c[0]) for c in rings.customdata] == [5, 1, 8]
    assert star.name == "selected #3" and tuple(star.x) + tuple(star.y) == (coords[3, 0], coords[3, 1])
    assert fig.layout.xaxis.title.text == "PC1 (40.0 % of variance)"


def test_a_type_level_layer_is_one_labelled_point_per_word_form():
    occurrences = pd.DataFrame(
        {"token": ["serve", "served", "serve", "serves", "serve"], "sense": ["A", "B", "A", "A", "B"]}
    )
    static = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1], [1, 0, 0]], dtype=np.float32)
    frame, titles = word_form_frame(occurrences, static)
    assert list(frame["form"]) == ["serve", "served", "serves"] and list(frame["count"]) == [3, 1, 1]
    assert frame["senses"][0] == "A 2 · B 1" and list(frame["occurrence"]) == [0, 1, 3]
    assert "% of variance" in titles[0]
    one, _ = word_form_frame(occurrences.iloc[[0, 2]], static[[0, 2]])
    assert list(one["count"]) == [2] and (one["x"] == 0).all()


def test_small_multiples_share_colours_across_layers():
    records = demo_corpus()
    occurrences = find_occurrences(records, "bat")
    coords = np.random.default_rng(0).normal(size=(len(occurrences), 2)).astype(np.float32)
    points = point_frame(records, occurrences, coords)
    forms, titles = word_form_frame(occurrences, np.ones((len(occurrences), 3), dtype=np.float32))
    panels = [
        {"title": "char-CNN", "word_forms": forms, "axis_titles": titles},
        {"title": "LSTM-1", "points": points, "axis_titles": ("PC1", "PC2")},
        {"title": "LSTM-2", "points": points, "axis_titles": ("PC1", "PC2")},
    ]
    fig = small_multiples(panels, "sense")
    assert [a.text for a in fig.layout.annotations] == ["char-CNN", "LSTM-1", "LSTM-2"]
    by_name = {}
    for trace in fig.data[1:]:
        by_name.setdefault(trace.name, set()).add(trace.marker.color)
    assert all(len(colors) == 1 for colors in by_name.values())  # one colour per sense in every panel
    assert sum(bool(trace.showlegend) for trace in fig.data[1:]) == 2


def test_snippet_escapes_html_and_marks_the_word():
    tokens = ["<b>", "x"] + ["w"] * 20 + ["play", "&"]
    text = snippet(tokens, 22, context=3)
    assert text == "… w w w <b>play</b> &amp;"
    assert snippet(["a", "<i>"], 1) == "a <b>&lt;i&gt;</b>"


def test_projector_tsv_has_one_row_per_vector_and_a_header():
    vectors = np.array([[0.5, -1.0, 2.0], [1e-7, 3.0, 4.25]], dtype=np.float32)
    metadata = pd.DataFrame({"token": ["play", "play"], "sense": ["a\tb", None], "sentence": ["x\ny", "z"]})
    tensors, meta = projector_tsv(vectors, metadata)
    rows = [line.split("\t") for line in tensors.splitlines()]
    np.testing.assert_allclose(np.array(rows, dtype=np.float32), vectors, rtol=1e-6)
    assert meta.splitlines() == ["token\tsense\tsentence", "play\ta b\tx y", "play\t\tz"]
    archive = zipfile.ZipFile(io.BytesIO(projector_zip(vectors, metadata, name="play")))
    assert sorted(archive.namelist()) == ["metadata.tsv", "projector_config.json", "tensors.tsv"]
    config = json.loads(archive.read("projector_config.json"))
    assert config["embeddings"][0] == {
        "tensorName": "play",
        "tensorShape": [2, 3],
        "tensorPath": "tensors.tsv",
        "metadataPath": "metadata.tsv",
    }
    with pytest.raises(ValueError, match="2 vectors but 1 metadata rows"):
        projector_tsv(vectors, metadata.iloc[:1])


def test_attention_heatmap_is_target_by_source_under_its_coverage():
    source, target = ["a", "dog", "runs", "."], ["ein", "hund", "läuft", ".", "</s>"]
    alpha = np.random.default_rng(0).dirichlet(np.ones(4), size=5)
    fig = attention_figure(source, target, alpha, unknown_source=[2], unknown_target=[1])
    heatmap, coverage_bars = fig.data
    np.testing.assert_allclose(np.array(heatmap.z), alpha, rtol=1e-6)
    np.testing.assert_allclose(np.array(coverage_bars.y), alpha.sum(axis=0), rtol=1e-6)
    assert list(fig.layout.xaxis2.ticktext)[:2] == ["a", "dog"] and "runs</b> ⚠ OOV" in fig.layout.xaxis2.ticktext[2]
    assert "hund</b> ⚠ <unk>" in fig.layout.yaxis2.ticktext[1] and fig.layout.xaxis2.tickfont.size >= 14
    assert heatmap.text[1][1] == f"hund ← dog: {alpha[1, 1]:.3f}"
    with pytest.raises(ValueError, match=r"expected \(5, 4\)"):
        attention_figure(source, target, alpha.T)


def test_low_coverage_and_repetition_are_found():
    alpha = np.array([[0.9, 0.1, 0.0], [0.8, 0.0, 0.2], [0.1, 0.0, 0.9]])
    assert coverage(alpha).tolist() == pytest.approx([1.8, 0.1, 1.1]) and low_coverage(alpha) == [1]
    assert most_repeated_ngram("sodass sie wünschen , sodass sie wünschen , sodass sie wünschen".split()) == (
        "sodass sie wünschen",
        3,
    )
    assert most_repeated_ngram("ein mann spielt gitarre".split()) is None


def test_the_line_view_is_one_standalone_page_with_a_line_per_pair():
    source, target = ["<b>", "dog"], ["hund", "&"]
    alpha = np.array([[0.25, 0.75], [1.0, 0.0]])
    page = attention_lines_html(source, target, alpha, unknown_source=[0], title="t <i>")
    assert page.startswith("<!DOCTYPE html>") and "http" not in page.replace("http://www.w3.org/2000/svg", "")
    assert page.count("<line class='a'") == 4 and "data-s='1' data-t='0' data-a='0.7500'" in page
    assert "&lt;b&gt; ⚠ OOV" in page and "<i>" not in page and "&amp;" in page
    html = standalone_html(attention_figure(source, target, alpha), "title")
    assert "<html>" in html[:100] and "plotly.js" in html.lower() and len(html) > 1_000_000  # works offline


def test_repeated_tokens_keep_their_own_cells():
    fig = attention_figure([".", "a", "."], ["x", "x"], np.full((2, 3), 1 / 3))
    assert np.array(fig.data[0].z).shape == (2, 3)


def probe_result(word, mfs, layers, senses=3):
    return {
        "word": word, "instances": 100, "available": 400, "senses": senses, "mfs_accuracy": mfs,
        "mfs_interval": [mfs - 0.05, mfs + 0.05], "layer_accuracy": layers,
        "layer_interval": [[a - 0.1, a + 0.05] for a in layers], "layers": ["char-CNN", "LSTM-1", "LSTM-2"],
        "type_level": [True, False, False],
    }  # fmt: skip


def test_probe_chart_has_named_layers_error_bars_and_the_baseline():
    results = [probe_result("hard", 0.8, [0.7, 0.85, 0.9]), probe_result("serve", 0.41, [0.5, 0.6, 0.7], 4)]
    frame = probe_frame(results)
    assert len(frame) == 8
    assert frame.query("word == 'serve' and layer == 'MFS baseline'")["accuracy"].item() == pytest.approx(0.41)
    fig = probe_figure(results)
    assert [trace.name for trace in fig.data] == ["char-CNN (type-level)", "LSTM-1", "LSTM-2", "MFS baseline"]
    assert list(fig.data[2].y) == [0.9, 0.7]
    np.testing.assert_allclose(fig.data[2].error_y.arrayminus, [0.1, 0.1])
    np.testing.assert_allclose(fig.data[2].error_y.array, [0.05, 0.05])
    assert fig.data[0].marker.pattern.shape == "/" and not fig.data[1].marker.pattern.shape
    assert [list(c) for c in fig.data[1].customdata] == [["hard", 1], ["serve", 1]]  # what a click opens
