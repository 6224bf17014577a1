"""Figures and exports: sense scatter, word-form labels, small multiples, projector TSV, probe chart
(the attention figures: test_attention.py)."""

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from spacy_contextual.analysis.occurrences import demo_corpus, find_occurrences
from spacy_contextual.analysis.palette import OKABE_ITO
from spacy_contextual.analysis.probe_plot import probe_figure, probe_frame
from spacy_contextual.analysis.projector_export import projector_tsv, projector_zip
from spacy_contextual.analysis.sense_plots import (
    LABEL_POSITIONS,
    label_positions,
    marker_sizes,
    point_frame,
    sense_scatter,
    shared_range,
    small_multiples,
    snippet,
    word_form_figure,
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
    halo, rings, star = fig.data[-3], fig.data[-2], fig.data[-1]
    assert rings.name == "3 nearest neighbours" and [int(c[0]) for c in rings.customdata] == [5, 1, 8]
    assert rings.marker.color == "#000000" and halo.marker.color == "#FFFFFF" and not halo.showlegend  # any colour
    assert halo.marker.line.width > rings.marker.line.width and list(halo.x) == list(rings.x)
    assert star.name == "selected #3" and tuple(star.x) + tuple(star.y) == (coords[3, 0], coords[3, 1])
    assert fig.layout.xaxis.title.text == "PC1 (40.0 % of variance)"
    assert {t.marker.color for t in fig.data[:-3]} <= set(OKABE_ITO)  # colour-blind-safe categories


def test_two_charts_share_one_scale_and_mark_neighbours_as_shared_gained_lost():
    records = demo_corpus()
    occurrences = find_occurrences(records, "bat")
    rng = np.random.default_rng(0)
    small = point_frame(records, occurrences, 0.2 * rng.normal(size=(len(occurrences), 2)))
    large = point_frame(records, occurrences, 0.5 * rng.normal(size=(len(occurrences), 2)))
    scale = shared_range(small, large)
    marks = {"2 shared": [1, 2], "1 gained (B only)": [3], "1 lost (A only)": [4]}
    figures = [sense_scatter(f, "sense", selected=0, marks=marks, axis_range=scale) for f in (small, large)]
    for fig in figures:
        assert list(fig.layout.xaxis.range) == scale[0] and list(fig.layout.yaxis.range) == scale[1]
        named = {t.name: t for t in fig.data if t.name in marks}
        assert {n: [int(c[0]) for c in t.customdata] for n, t in named.items()} == marks
        assert len({t.marker.symbol for t in named.values()}) == 3  # told apart without colour
    low, high = scale[0]
    assert low <= min(small["x"].min(), large["x"].min()) and high >= max(small["x"].max(), large["x"].max())


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


def label_boxes(x, y, labels, sizes, positions, width, height):
    """The label boxes as label_positions estimates them (pixels)."""
    from spacy_contextual.analysis.sense_plots import FORM_PAD, LABEL_FONT_SIZE

    px = (x - x.min() + FORM_PAD * np.ptp(x)) / ((1 + 2 * FORM_PAD) * np.ptp(x)) * width
    py = (y - y.min() + FORM_PAD * np.ptp(y)) / ((1 + 2 * FORM_PAD) * np.ptp(y)) * height
    char, line = 0.62 * LABEL_FONT_SIZE, 1.3 * LABEL_FONT_SIZE
    boxes = []
    for i, position in enumerate(positions):
        w, r = char * len(labels[i]), sizes[i] / 2
        vertical, horizontal = position.split(" ")
        cy = {"top": py[i] + r + line / 2, "bottom": py[i] - r - line / 2, "middle": py[i]}[vertical]
        cx = {"center": px[i], "right": px[i] + r + w / 2, "left": px[i] - r - w / 2}[horizontal]
        boxes.append((cx - w / 2, cy - line / 2, cx + w / 2, cy + line / 2))
    return boxes


def test_word_form_labels_do_not_overlap():
    # serve ×1,850 and served ×1,410 lie almost on top of each other in the type-level PCA
    frame = pd.DataFrame(
        {"x": [0.0, 0.02, 1.0, -1.0], "y": [0.0, 0.01, 0.5, -0.6], "form": ["serve", "served", "serves", "serving"],
         "count": [1850, 1410, 600, 500], "senses": ["a"] * 4, "sense": ["a"] * 4, "occurrence": [0, 1, 2, 3]}
    )  # fmt: skip
    labels = [f"{f} ×{c:,}" for f, c in zip(frame["form"], frame["count"], strict=True)]
    sizes = marker_sizes(frame["count"])
    for width, height in ((600, 560), (250, 260)):  # the big chart and one small multiple
        positions = label_positions(frame["x"], frame["y"], labels, sizes, width, height)
        assert set(positions) <= set(LABEL_POSITIONS)
        boxes = label_boxes(frame["x"].to_numpy(), frame["y"].to_numpy(), labels, sizes, positions, width, height)
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert min(a[2], b[2]) <= max(a[0], b[0]) or min(a[3], b[3]) <= max(a[1], b[1]), (labels, positions)
    figure = word_form_figure(frame)
    assert list(figure.data[0].textposition)[:2] != ["top center", "top center"]


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
    for panel in panels[1:]:  # the query and its neighbours marked in every contextual panel
        panel.update(selected=2, neighbours=[0, 5])
    marked = small_multiples(panels, "sense")
    rings = [t for t in marked.data if t.name == "nearest neighbours (each layer's own)"]
    stars = [t for t in marked.data if t.name == "selected"]
    assert len(rings) == len(stars) == 2 and [int(c[0]) for c in rings[0].customdata] == [0, 5]
    assert sum(bool(t.showlegend) for t in rings) == 1 and rings[0].marker.color == "#000000"


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


def probe_result(word, mfs, layers, senses=3):
    return {
        "word": word, "instances": 100, "available": 400, "senses": senses, "mfs_accuracy": mfs,
        "mfs_interval": [mfs - 0.05, mfs + 0.05], "layer_accuracy": layers, "majority_share": mfs + 0.02,
        "layer_interval": [[a - 0.1, a + 0.05] for a in layers], "layers": ["char-CNN", "LSTM-1", "LSTM-2"],
        "type_level": [True, False, False],
    }  # fmt: skip


def test_probe_chart_has_named_layers_error_bars_and_the_baseline():
    results = [probe_result("hard", 0.8, [0.7, 0.85, 0.9]), probe_result("serve", 0.41, [0.5, 0.6, 0.7], 4)]
    frame = probe_frame(results)
    assert len(frame) == 8
    assert frame.query("word == 'serve' and layer == 'MFS baseline'")["accuracy"].item() == pytest.approx(0.41)
    fig = probe_figure(results)
    bars = [trace for trace in fig.data if trace.type == "bar"]
    names = ["char-CNN (type-level)", "LSTM-1", "LSTM-2", "MFS baseline"]
    assert [trace.name for trace in bars] == names and fig.data[-1].name == "majority-sense share"
    lines = [(s.x0, s.x1, s.y0) for s in fig.layout.shapes]  # each word's majority share across its group
    np.testing.assert_allclose(lines, [(-0.45, 0.45, 0.82), (0.55, 1.45, 0.43)])
    values = {trace.offsetgroup: trace for trace in fig.data if trace.type == "scatter" and trace.mode == "text"}
    for bar in bars:  # each value above its bar's upper whisker, in the bar's own slot of the group
        text = values[bar.offsetgroup]
        tops = np.asarray(bar.y) + np.asarray(bar.error_y.array)
        assert list(text.x) == list(bar.x) and (np.asarray(text.y) > tops).all() and fig.layout.scattermode == "group"
        for y, share in zip(text.y, [0.82, 0.43], strict=True):  # and never on the dashed majority line
            assert not y - 0.015 < share < y + 0.055
    assert bars[0].marker.pattern.bgcolor == "white" and "type-level" in bars[0].hovertemplate
    assert list(bars[2].y) == [0.9, 0.7]
    np.testing.assert_allclose(bars[2].error_y.arrayminus, [0.1, 0.1])
    np.testing.assert_allclose(bars[2].error_y.array, [0.05, 0.05])
    assert bars[0].marker.pattern.shape == "/" and not bars[1].marker.pattern.shape
    assert [list(c) for c in bars[1].customdata] == [["hard", 1], ["serve", 1]]  # what a click opens


@pytest.mark.parametrize("points", [300, 4333, 20_000])
def test_the_selection_is_drawn_above_a_cloud_of_any_size(points):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"x": rng.normal(size=points), "y": rng.normal(size=points), "occurrence": np.arange(points),
         "sense": rng.choice(["HARD1", "HARD2", "HARD3"], points), "form": "hard", "context": "a hard task"}
    )  # fmt: skip
    neighbours = list(range(1, 11))
    fig = sense_scatter(frame, "sense", "LSTM-2", ("PC1", "PC2"), selected=0, neighbours=neighbours)
    cloud, marks = fig.data[:3], fig.data[3:]
    assert [trace.name for trace in marks] == ["10 nearest neighbours (halo)", "10 nearest neighbours", "selected #0"]
    # plotly draws WebGL traces above SVG ones: the marks are of the cloud's own kind, and after it
    assert {trace.type for trace in fig.data} == {"scattergl" if points > 1000 else "scatter"}
    assert marks[-1].marker.size > 2 * cloud[0].marker.size and marks[-1].marker.line.width >= 2  # outlined
    assert marks[-1].marker.color not in {trace.marker.color for trace in cloud}
    faded = points > 300
    assert all(trace.marker.opacity == (0.25 if faded else 0.8) for trace in cloud)
    legend = fig.layout.legend  # hung from the figure's bottom: plotly's margin holds it and the axis title
    assert legend.orientation == "h" and (legend.yref, legend.y, legend.yanchor) == ("container", 0, "bottom")
    assert fig.layout.title.x == 0 and fig.layout.title.yanchor == "bottom" and fig.layout.margin.t >= 70
    plain = sense_scatter(frame, "sense")  # nothing selected: nothing faded
    assert all(trace.marker.opacity == 0.8 for trace in plain.data)
