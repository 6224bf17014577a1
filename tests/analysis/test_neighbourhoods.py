"""Neighbour views: aligned KWIC lines and precision@k, sentence-level neighbours of any word, the
two-model comparison, sense purity per layer, projections with explained variance and alignment."""

import numpy as np
import pandas as pd
import pytest

from spacy_contextual.analysis.compare import aligned_projections, neighbour_change, neighbour_sets
from spacy_contextual.analysis.corpus_index import build_token_index, nearest_tokens
from spacy_contextual.analysis.neighbours import kwic, kwic_html, neighbour_table, precision_at_k
from spacy_contextual.analysis.occurrences import demo_corpus, find_occurrences
from spacy_contextual.analysis.projection import align, project
from spacy_contextual.analysis.purity import knn_sense_accuracy, silhouette, structure_strength, word_form_accuracy


def test_kwic_lines_put_the_word_in_the_middle_cut_between_words():
    tokens = "one two three four five six seven eight nine ten".split()
    left, word, right = kwic(tokens, 4, width=12)
    assert (left, word, right) == ("… three four", "five", "six seven …") and max(len(left), len(right)) <= 12
    assert kwic(tokens, 0, width=12) == ("", "one", "two three …")
    left, word, right = kwic(tokens, 9, width=100)
    assert left == " ".join(tokens[:9]) and right == ""
    assert kwic(["a", "extraordinarily", "b"], 2, width=8) == ("…", "b", "")  # never half a word
    for position in range(len(tokens)):
        left, _, right = kwic(tokens, position)
        assert all(w in tokens or w == "…" for w in (left + " " + right).split())
    table = pd.DataFrame(
        {"distance": [0.1], "sense": ["A"], "same_sense": [True], "left": ["<a>"], "word": ["b&"], "right": [""]}
    )
    table.attrs["farthest"] = 0.4
    page = kwic_html(table, query_sense="A")
    assert "&lt;a&gt;" in page and "b&amp;" in page and "✓ A" in page and "text-align:right" in page
    assert "width:25.0%" in page and ">0.100<" in page and "data-occurrence" not in page.split("</style>")[1]
    linked = kwic_html(table.assign(occurrence=[12]))
    assert "<tr data-occurrence='12'>" in linked  # a line that a page can link to its point


def test_neighbour_table_knows_the_same_sense_and_precision():
    records = demo_corpus()
    occurrences = find_occurrences(records, "bank")  # 7 finance, then 7 river
    vectors = np.array([[1.0, 0.1 * i] if i < 7 else [0.1 * i, 1.0] for i in range(14)], dtype=np.float32)
    table = neighbour_table(records, occurrences, vectors, 0, 6)
    assert table["same_sense"].tolist() == [True] * 6 and precision_at_k(table, "bank-finance") == 1.0
    table = neighbour_table(records, occurrences, vectors, 0, 10)
    assert precision_at_k(table, "bank-finance") == pytest.approx(0.6)
    assert table["word"].str.lower().eq("bank").all() and precision_at_k(table, None) is None


def embed_sentences(sentences):
    """Layer j of a token: a fixed random vector of its lowercased form (j = 0), shifted by its position (j = 1)."""
    out = []
    for tokens in sentences:
        layers = np.zeros((2, len(tokens), 6), dtype=np.float32)
        for i, token in enumerate(tokens):
            layers[0, i] = np.random.RandomState(sum(map(ord, token.lower()))).randn(6)
            layers[1, i] = layers[0, i] + 0.01 * i
        out.append(layers)
    return out


def test_sentence_level_neighbours_search_every_word_of_the_corpus():
    records = demo_corpus()
    index = build_token_index(embed_sentences, records, max_tokens=200)
    assert index.sentences < len(records) and len(index.record) <= 200 and index.total_sentences == len(records)
    at = records[0]["target"]  # "play" in the first sentence
    query = embed_sentences([records[0]["tokens"]])[0][:, at]
    hits = nearest_tokens(index, records, query[0], 0, k=5, exclude=(0, at))
    assert (hits["token"].str.lower() == "play").all() and not ((hits["record"] == 0) & (hits["position"] == at)).any()
    others = nearest_tokens(index, records, query[0], 0, k=5, other_words_only="play")
    assert not (others["token"].str.lower() == "play").any() and len(others) == 5
    assert list(others["similarity"]) == sorted(others["similarity"], reverse=True)


def test_a_first_sentence_longer_than_the_index_is_indexed_up_to_its_limit():
    records = [{"tokens": [f"w{i % 7}" for i in range(500)]}, {"tokens": ["a", "b"]}]
    index = build_token_index(embed_sentences, records, max_tokens=120)
    assert index.sentences == 1 and len(index.record) == 120 and index.layers.shape == (120, 2, 6)
    np.testing.assert_array_equal(index.position, np.arange(120))
    np.testing.assert_allclose(index.layers[:, 1], embed_sentences([records[0]["tokens"]])[0][1, :120], atol=1e-2)


def test_neighbour_change_is_zero_for_the_same_model_and_ranks_the_changed_first():
    records = demo_corpus()
    occurrences = find_occurrences(records, "bat")
    a = np.random.default_rng(0).normal(size=(len(occurrences), 8)).astype(np.float32)
    same = neighbour_change(records, occurrences, a, a * 3.0, k=4)
    assert (same["overlap"] == 1.0).all()
    b = a.copy()
    b[5] = -b[5]  # one occurrence moved: its neighbours change most
    change = neighbour_change(records, occurrences, a, b, k=4)
    assert change["occurrence"].iloc[0] == 5 and change["overlap"].iloc[0] < 1.0
    assert "[bat]" in change["context"].iloc[0]
    assert neighbour_sets(a, 3).shape == (len(a), 3) and not (neighbour_sets(a, 3) == np.arange(len(a))[:, None]).any()
    with pytest.raises(ValueError, match="12 vectors from model A but 11"):
        neighbour_change(records, occurrences, a, b[:-1])


def test_projections_name_their_axes_and_align_onto_each_other():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(40, 5)) * [5, 2, 1, 0.1, 0.1]
    projection = project(vectors, "pca")
    assert projection.axis_titles[0].startswith("PC1 (") and "% of variance" in projection.axis_titles[1]
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    moved = 2.5 * projection.coords @ rotation + 7.0
    np.testing.assert_allclose(align(moved, projection.coords), projection.coords, atol=1e-4)
    first, second = aligned_projections(vectors, -vectors @ np.diag([1, 1, 1, 1, -1]))
    np.testing.assert_allclose(second.coords, first.coords, atol=1e-3)
    assert project(np.ones((4, 3)), "pca").axis_titles[0] == "PC1 (all vectors equal)"


def test_purity_scores():
    senses = ["A"] * 10 + ["B"] * 10
    separated = np.array([[1.0, 0.05 * i] for i in range(10)] + [[0.05 * i, 1.0] for i in range(10)])
    assert knn_sense_accuracy(separated, senses) == 1.0
    mixed = np.random.default_rng(0).normal(size=(20, 4))
    assert knn_sense_accuracy(mixed, senses) < 0.8
    assert word_form_accuracy(["hard"] * 6 + ["harder"] * 4, ["H1"] * 5 + ["H2"] + ["H2"] * 3 + ["H1"]) == 0.8
    assert silhouette(separated, senses) > 0.5 and silhouette(separated, ["A"] * 20) is None
    assert [structure_strength(s) for s in (0.8, 0.6, 0.3, 0.17)] == ["strong", "reasonable", "weak", "no substantial"]
