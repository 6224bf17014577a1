"""Figures and exports: sense scatter, projector TSV, attention heatmap, probe chart."""

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from spacy_contextual.analysis.attention import attention_figure
from spacy_contextual.analysis.occurrences import demo_corpus, find_occurrences
from spacy_contextual.analysis.probe_plot import probe_figure, probe_frame
from spacy_contextual.analysis.projector_export import projector_tsv, projector_zip
from spacy_contextual.analysis.sense_plots import point_frame, sense_scatter, snippet


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
    with pytest.raises(ValueError, match="cannot colour by 'colour'"):
        sense_scatter(frame, "colour")


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


def test_attention_heatmap_is_target_by_source_with_values_on_hover():
    source, target = ["a", "dog", "runs", "."], ["ein", "hund", "läuft", ".", "</s>"]
    alpha = np.random.default_rng(0).dirichlet(np.ones(4), size=5)
    fig = attention_figure(source, target, alpha)
    heatmap = fig.data[0]
    np.testing.assert_allclose(np.array(heatmap.z), alpha, rtol=1e-6)
    assert list(fig.layout.xaxis.ticktext) == source and list(fig.layout.yaxis.ticktext) == target
    assert heatmap.text[1][1] == f"hund ← dog: {alpha[1, 1]:.3f}"
    with pytest.raises(ValueError, match=r"expected \(5, 4\)"):
        attention_figure(source, target, alpha.T)


def test_repeated_tokens_keep_their_own_cells():
    fig = attention_figure([".", "a", "."], ["x", "x"], np.full((2, 3), 1 / 3))
    assert np.array(fig.data[0].z).shape == (2, 3)


def test_probe_chart_puts_each_layer_next_to_the_baseline():
    results = [
        {"word": "hard", "instances": 100, "senses": 3, "mfs_accuracy": 0.8, "layer_accuracy": [0.7, 0.85, 0.9]},
        {"word": "serve", "instances": 80, "senses": 4, "mfs_accuracy": 0.41, "layer_accuracy": [0.5, 0.6, 0.7]},
    ]
    frame = probe_frame(results)
    assert len(frame) == 8
    assert frame.query("word == 'serve' and layer == 'MFS baseline'")["accuracy"].item() == pytest.approx(0.41)
    fig = probe_figure(results)
    assert [trace.name for trace in fig.data] == ["layer 0", "layer 1", "layer 2", "MFS baseline"]
    assert list(fig.data[2].y) == [0.9, 0.7]
