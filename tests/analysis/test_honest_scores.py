"""Scores that stay honest in edge cases: ties reported as ties, the random-neighbour baseline without
the query, one majority share for the probe and the explorer, the unattended-word mark visible on a bar
of height zero, markdown in user text shown as typed."""

import numpy as np
import pytest

from spacy_contextual.analysis.attention import UNATTENDED_NAME, attention_figure
from spacy_contextual.analysis.markdown import escape_markdown
from spacy_contextual.analysis.neighbours import (
    chance_precision,
    kwic_html,
    nearest_neighbours,
    neighbour_table,
    precision_at_k,
    tie_note,
)
from spacy_contextual.analysis.occurrences import demo_corpus, find_occurrences
from spacy_contextual.analysis.purity import majority_share
from spacy_contextual.analysis.sense_probe import probe_word


def test_equal_cosines_are_ties_and_give_no_precision():
    records = demo_corpus()
    occurrences = find_occurrences(records, "play")  # 20 occurrences of one word form
    static = np.tile(np.arange(1.0, 5.0, dtype=np.float32), (len(occurrences), 1))  # char-CNN: one vector a form
    table = neighbour_table(records, occurrences, static, 0, 10)
    assert table["tied"].all() and table.attrs["tied_outside"] == 9  # 19 others at cosine 1: 10 in, 9 out
    assert precision_at_k(table, occurrences["sense"].iloc[0]) is None  # not a number from a tie-break
    note = tie_note(table)
    assert note.startswith("10 of the 10 nearest tie (cosine distance 0.000) with 9 occurrences left out")
    assert "<td class='rank'>=</td>" in kwic_html(table, occurrences["sense"].iloc[0])


def test_a_tie_only_inside_the_k_is_no_tie():
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=np.float32)
    table = nearest_neighbours(vectors, 0, 2)  # occurrences 1 and 2 tie with each other, both inside the 2
    assert not table["tied"].any() and tie_note(table) is None
    table = nearest_neighbours(vectors, 0, 1)  # 1 and 2 tie across the boundary of k = 1
    assert table["tied"].tolist() == [True] and table.attrs["tied_outside"] == 1
    distinct = nearest_neighbours(np.random.default_rng(0).normal(size=(30, 8)), 3, 10)
    assert not distinct["tied"].any()


def test_the_random_baseline_leaves_the_query_out():
    records = demo_corpus()
    occurrences = find_occurrences(records, "play")
    query = int(np.flatnonzero(occurrences["sense"] == "play-sport")[0])
    same = int((occurrences["sense"] == "play-sport").sum())
    assert chance_precision(occurrences, query) == pytest.approx((same - 1) / (len(occurrences) - 1))
    assert (same, len(occurrences)) == (5, 20) and chance_precision(occurrences, query) == pytest.approx(4 / 19)
    unlabelled = occurrences.assign(sense=None)
    assert chance_precision(unlabelled, 0) is None
    # the mean precision@k of every possible set of random neighbours is exactly the chance level
    rng = np.random.default_rng(1)
    others = np.delete(np.arange(len(occurrences)), query)
    draws = [(occurrences["sense"].iloc[rng.choice(others, 10, replace=False)] == "play-sport").mean()
             for _ in range(4000)]  # fmt: skip
    assert np.mean(draws) == pytest.approx(4 / 19, abs=0.01)


def test_the_probe_and_the_explorer_report_one_majority_share():
    senses = ["a"] * 4 + ["b"] * 4 + ["c"] * 3  # the training folds' own majority shares average 0.39
    vectors = np.random.default_rng(0).normal(size=(len(senses), 2, 4)).astype(np.float32)
    result = probe_word(vectors, senses, folds=5, seed=0)
    assert result["majority_share"] == majority_share(senses) == pytest.approx(4 / 11)  # what the explorer shows


def test_the_unattended_mark_shows_above_a_bar_of_height_zero():
    source, target = ["a", "dog", "runs"], ["ein", "hund"]
    alpha = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # no attention at all on "a": coverage 0
    fig = attention_figure(source, target, alpha)
    marks = next(trace for trace in fig.data if trace.name == UNATTENDED_NAME)
    assert list(marks.x) == [0] and marks.marker.size >= 10 and marks.marker.color == "#E69F00"
    top = fig.layout.yaxis.range[1]
    assert marks.y[0] >= 0.3 * top and marks.y[0] <= top  # clear of the (empty) bar and its value, on the axis
    assert marks.xaxis == "x" and marks.yaxis == "y"  # in the coverage panel
    every = attention_figure(source, ["ein", "hund", "läuft"], np.eye(3))  # every word attended: no mark
    assert not [trace for trace in every.data if trace.name == UNATTENDED_NAME]


def test_markdown_in_user_text_is_shown_as_typed():
    assert escape_markdown("a **b** _c_") == r"a \*\*b\*\* \_c\_"
    assert escape_markdown(":red[x] $1 `y` <b>") == r"\:red\[x\] \$1 \`y\` \<b\>"
    joiner = "\u2060"  # invisible: no autolink is made of a URL, a www. name or an address
    assert escape_markdown("http://a.b www.c x@y") == f"http{joiner}\\:\\/\\/a\\.b www{joiner}\\.c x{joiner}\\@y"
    assert escape_markdown("plain words 123") == "plain words 123"
