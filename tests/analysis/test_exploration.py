"""What the explorer's Projector- and LIT-like tools compute: samples drawn across a file and stratified by
sense, the search box, slices scored beside the whole set, cosine and euclidean neighbours, type-level
layers scored as ties, and data shown as text (never markup) in every chart."""

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from spacy_contextual.analysis.compare import change_html
from spacy_contextual.analysis.corpus_index import indexed_records
from spacy_contextual.analysis.layer_weights import layer_weights_figure
from spacy_contextual.analysis.neighbours import nearest_neighbours
from spacy_contextual.analysis.probe_plot import probe_figure
from spacy_contextual.analysis.purity import knn_sense_accuracy, knn_sense_votes, word_form_votes
from spacy_contextual.analysis.sampling import ALL, RANDOM, STRATIFIED, draw, spread_order
from spacy_contextual.analysis.search import SearchError, search_matches
from spacy_contextual.analysis.sense_plots import point_frame, sense_scatter, small_multiples, word_form_frame
from spacy_contextual.analysis.sense_probe import probe_word, type_level_layers
from spacy_contextual.analysis.slices import ALL_NAME, occurrence_votes, slice_table


def test_every_prefix_of_the_spread_order_is_stratified():
    senses = ["A"] * 3000 + ["B"] * 1000 + ["C"] * 333  # in blocks, as a sorted file would be
    order = spread_order(senses, seed=0)
    assert sorted(order.tolist()) == list(range(len(senses)))
    for prefix in (10, 100, 2000, 4000):
        counts = Counter(senses[i] for i in order[:prefix])
        for sense, total in Counter(senses).items():
            assert abs(counts[sense] - prefix * total / len(senses)) <= 1.5
    assert spread_order(senses, 0).tolist() == order.tolist() and spread_order(senses, 1).tolist() != order.tolist()


def test_a_sample_says_how_it_was_drawn_and_covers_the_file():
    senses = ["HARD1"] * 3455 + ["HARD2"] * 502 + ["HARD3"] * 376  # "hard": the first 2,000 are all HARD1
    sample = draw(senses, 2000)
    assert sample.describe("occurrences") == "2,000 of 4,333 occurrences, stratified by sense"
    assert sample.how == STRATIFIED and (np.diff(sample.indices) > 0).all()  # corpus order
    counts = Counter(senses[i] for i in sample.indices)
    assert (
        counts == {"HARD1": 1595, "HARD2": 232, "HARD3": 173}
        or max(abs(counts[s] - 2000 * c / 4333) for s, c in Counter(senses).items()) <= 1.5
    )
    unlabelled = draw([None] * 9000, 2000)
    assert unlabelled.how == RANDOM and unlabelled.indices.max() > 8000 and unlabelled.indices.min() < 1000
    assert unlabelled.describe() == "2,000 of 9,000, drawn at random across the file"
    everything = draw(senses, 5000)
    assert everything.how == ALL and everything.describe("occurrences") == "all 4,333 occurrences"


def test_the_corpus_index_takes_sentences_across_the_file():
    records = [{"tokens": ["w"] * 10, "target": 0, "sense": "A" if i < 900 else "B"} for i in range(1000)]
    sample = indexed_records(records, max_tokens=2000)
    assert len(sample.indices) == 200 and sample.total == 1000 and sample.how == STRATIFIED
    chosen = Counter(records[i]["sense"] for i in sample.indices)
    assert chosen == {"A": 180, "B": 20}  # the senses' shares, not the file's first 200 sentences
    assert sample.describe("sentences") == "200 of 1,000 sentences, stratified by sense"


def occurrences_frame():
    return pd.DataFrame({
        "token": ["hard", "harder", "Hard", "hardest", "hard"],
        "sense": ["HARD1", "HARD2", "HARD1", None, "HARD3"],
        "sentence": ["it was hard", "a harder task", "Hard times", "the hardest part", "hard cheese (aged)"],
    })  # fmt: skip


def test_search_by_form_sense_and_a_regex_on_the_sentence():
    frame = occurrences_frame()
    assert search_matches(frame, "HARDE", "form").tolist() == [1, 3]  # case-insensitive substring
    assert search_matches(frame, "hard1", "sense").tolist() == [0, 2]
    assert search_matches(frame, r"^(a|the) hard", "sentence", as_regex=True).tolist() == [1, 3]
    assert search_matches(frame, "(aged)", "sentence").tolist() == [4]  # plain text: no pattern
    assert search_matches(frame, "  ", "form").tolist() == []
    with pytest.raises(SearchError, match="is not a regular expression"):
        search_matches(frame, "(unclosed", "sentence", as_regex=True)
    with pytest.raises(SearchError, match="cannot search by"):
        search_matches(frame, "x", "colour")


def test_a_regex_that_backtracks_without_end_is_refused_in_bounded_time():
    import time

    frame = pd.DataFrame({"token": ["x"] * 50, "sense": ["S"] * 50, "sentence": ["x" * 3000 + "!"] * 50})
    started = time.perf_counter()
    with pytest.raises(SearchError, match="took more than"):
        search_matches(frame, "(x+x+)+y", "sentence", as_regex=True)
    assert time.perf_counter() - started < 10


def test_slices_are_scored_as_the_whole_set_is():
    rng = np.random.default_rng(0)
    senses = ["A"] * 30 + ["B"] * 30
    vectors = np.vstack([rng.normal([3, 0], 1.0, size=(30, 2)), rng.normal([-3, 0], 1.0, size=(30, 2))])
    votes = occurrence_votes(vectors, senses, ["w"] * 60, type_level=False)
    assert votes.mean() == knn_sense_accuracy(vectors, senses)  # the whole set's row is the layer's score
    members = [0, 1, 2, 40, 41]
    table = slice_table({ALL_NAME: np.arange(60), "lasso": members}, senses, {"5-NN purity": votes})
    whole, sliced = table.iloc[0], table.iloc[1]
    assert (whole["size"], whole["majority share"], whole["share of all"]) == (60, 0.5, 1.0)
    assert (sliced["size"], sliced["majority sense"], sliced["majority share"]) == (5, "A", 0.6)
    assert sliced["5-NN purity"] == pytest.approx(votes[members].mean())  # the same computation, by hand
    unlabelled = slice_table({ALL_NAME: range(3)}, [None] * 3, {"5-NN purity": None})
    assert unlabelled["majority sense"].isna().all() and unlabelled["5-NN purity"].isna().all()


def test_a_type_level_layer_is_scored_as_its_forms_majority_sense():
    forms = ["hard"] * 8 + ["harder"] * 4
    senses = ["A"] * 5 + ["B"] * 3 + ["B"] * 4  # hard: mostly A; harder: always B
    assert word_form_votes(forms, senses).tolist() == [True] * 5 + [False] * 3 + [True] * 4
    vectors = occurrence_votes(np.ones((12, 3)), senses, forms, type_level=True)
    assert vectors.mean() == pytest.approx(9 / 12)  # not a 5-NN vote among 12 identical vectors
    # the probe: one vector per form at layer 0 (found in the data), context at layer 1
    rng = np.random.default_rng(0)
    layers = np.zeros((12, 2, 4), dtype=np.float32)
    layers[:, 0] = [[1, 0, 0, 0] if f == "hard" else [0, 1, 0, 0] for f in forms]
    layers[:, 1] = rng.normal(size=(12, 4))
    assert type_level_layers(layers, forms) == [True, False] and type_level_layers(layers, None) == [False, False]
    result = probe_word(layers, senses, folds=4, forms=forms)
    assert result["type_level"] == [True, False]
    assert result["layer_accuracy"][0] >= result["mfs_accuracy"]  # the forms' majorities, held out
    single = probe_word(np.ones((12, 1, 3)), senses, folds=4, forms=["hard"] * 12)
    assert single["layer_accuracy"][0] == single["mfs_accuracy"]  # one form: its majority is the MFS, not a tie-break


def test_neighbours_by_cosine_or_euclidean_distance():
    vectors = np.array([[1, 0], [10, 0], [0.9, 0.3], [-1, 0]], dtype=np.float32)
    cosine = nearest_neighbours(vectors, 0, k=2)
    euclidean = nearest_neighbours(vectors, 0, k=2, metric="euclidean")
    assert cosine["occurrence"].tolist() == [1, 2] and euclidean["occurrence"].tolist() == [2, 3]
    np.testing.assert_allclose(euclidean["distance"], [np.hypot(0.1, 0.3), 2.0], rtol=1e-6)
    np.testing.assert_allclose(cosine["distance"], [0.0, 1 - 0.9 / np.hypot(0.9, 0.3)], atol=1e-6)
    assert euclidean.attrs["farthest"] == pytest.approx(9.0) and euclidean.attrs["metric"] == "euclidean"
    with pytest.raises(ValueError, match="unknown distance"):
        nearest_neighbours(vectors, 0, metric="manhattan")


MARKUP = '<a href="http://evil.example/login">login</a><img src=x onerror=alert(1)>'


def test_data_is_shown_as_text_in_every_chart():
    frame = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [0.0, 1.0, 0.5], "occurrence": [0, 1, 2],
                          "sense": [MARKUP, "B", MARKUP], "form": ["<b>w</b>"] * 3, "context": ["c"] * 3})  # fmt: skip
    fig = sense_scatter(frame, "sense", selected=0, neighbours=[1])
    text = fig.to_json()
    assert "<a href" not in text and "<img" not in text and "<b>w" not in text
    shown = '&lt;a href="http://evil.example/login"&gt;login&lt;/a&gt;&lt;img src=x onerror=alert(1)&gt;'
    assert any(trace.name == shown for trace in fig.data)  # plotly turns the entities back into the characters
    forms, _ = word_form_frame(pd.DataFrame({"token": [MARKUP, "b", "c"], "sense": ["s", "s", MARKUP]}),
                               np.eye(3, dtype=np.float32))  # fmt: skip
    panels = [{"title": "t", "axis_titles": ("", ""), "word_forms": forms},
              {"title": "u", "axis_titles": ("", ""), "points": frame}]  # fmt: skip
    assert "<a href" not in small_multiples(panels, "sense").to_json()
    result = {"word": MARKUP, "instances": 10, "available": 10, "senses": 2, "mfs_accuracy": 0.5,
              "mfs_interval": [0.4, 0.6], "layer_accuracy": [0.5], "layer_interval": [[0.4, 0.6]],
              "layers": [MARKUP], "type_level": [False], "majority_share": 0.5}  # fmt: skip
    assert "<a href" not in probe_figure([result]).to_json()
    mixes = pd.DataFrame({"component": [MARKUP], "source": ["x"], "encoder": ["elmo"], "layer": [0], "label": ["l"],
                          "s": [0.0], "weight": [1.0], "gamma": [1.0]})  # fmt: skip
    assert "<a href" not in layer_weights_figure(mixes).to_json()
    change = pd.DataFrame({"occurrence": [0], "overlap": [0.5], "sense": [MARKUP], "context": [MARKUP],
                           "nearest in A": ["a"], "nearest in B": ["b"]})  # fmt: skip
    assert "<a href" not in change_html(change) and "<img" not in change_html(change)


def test_numbers_and_senses_in_the_change_table_never_wrap():
    change = pd.DataFrame({"occurrence": [10], "overlap": [0.25], "sense": ["HARD1"], "context": ["a b c"],
                           "nearest in A": ["a"], "nearest in B": ["b"]})  # fmt: skip
    page = change_html(change)
    assert "overflow-wrap:anywhere" not in page and ".change .num,.change .sense,.change th{white-space:nowrap}" in page
    assert "<td class='num'>#10</td>" in page and "<td class='sense'>HARD1</td>" in page


def test_point_frames_of_an_isolated_selection_keep_their_occurrences():
    from spacy_contextual.analysis.occurrences import demo_corpus, find_occurrences

    records = demo_corpus()
    occurrences = find_occurrences(records, "play")
    ids = np.array([3, 7, 11])
    frame = point_frame(records, occurrences.iloc[ids], np.zeros((3, 2), dtype=np.float32), ids=ids)
    fig = sense_scatter(frame, "sense", selected=7, neighbours=[3, 11, 15], search=[11, 2])
    names = [trace.name for trace in fig.data]
    assert "selected #7" in names and "2 nearest neighbours" in names  # 15 is not in the frame: left out
    assert "1 search matches" in names
    drawn = {int(c[0]) for trace in fig.data if trace.customdata is not None for c in trace.customdata}
    assert drawn == {3, 7, 11}
    sliced = sense_scatter(frame, "sense", slice_members=[3])
    selected = [list(t.selectedpoints) for t in sliced.data]
    assert sum(len(s) for s in selected) == 1 and all(t.unselected.marker.opacity < 0.2 for t in sliced.data)


def test_knn_votes_average_to_the_purity():
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(40, 5))
    senses = rng.choice(["A", "B"], 40).tolist()
    assert knn_sense_votes(vectors, senses).mean() == knn_sense_accuracy(vectors, senses)
