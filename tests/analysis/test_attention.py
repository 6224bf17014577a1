"""The attention audit: coverage, how peaked each row is, the source words no row attends to most,
the heatmap with its side bars, the line view and the standalone exports (labels kept)."""

import json
import re

import numpy as np
import pytest

from spacy_contextual.analysis.attention import (
    NOT_ALIGNMENT,
    attention_figure,
    attention_lines_html,
    coverage,
    most_repeated_ngram,
    row_entropy,
    row_peak,
    standalone_html,
    unattended,
)


def test_attention_heatmap_is_target_by_source_under_its_coverage_beside_each_rows_peak():
    source, target = ["a", "dog", "runs", "."], ["ein", "hund", "läuft", ".", "</s>"]
    alpha = np.random.default_rng(0).dirichlet(np.ones(4), size=5)
    fig = attention_figure(source, target, alpha, unknown_source=[2], unknown_target=[1])
    heatmap, coverage_bars, peaks = fig.data[:3]  # then the marks of the words no row attends to most
    np.testing.assert_allclose(np.array(heatmap.z), alpha, rtol=1e-6)
    np.testing.assert_allclose(np.array(coverage_bars.y), alpha.sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(np.array(peaks.x), alpha.max(axis=1), rtol=1e-6)
    assert peaks.orientation == "h" and peaks.text[0].startswith(f"{alpha[0].max():.2f} · ")
    assert list(fig.layout.xaxis2.ticktext)[:2] == ["a", "dog"] and "runs</b> ⚠ OOV" in fig.layout.xaxis2.ticktext[2]
    assert "hund</b> ⚠ <unk>" in fig.layout.yaxis2.ticktext[1] and fig.layout.xaxis2.tickfont.size >= 14
    assert heatmap.text[1][1] == f"hund ← dog: {alpha[1, 1]:.3f}"
    with pytest.raises(ValueError, match=r"expected \(5, 4\)"):
        attention_figure(source, target, alpha.T)


def test_rows_peak_entropy_and_the_words_no_row_attends_to_most():
    alpha = np.array([[0.9, 0.1, 0.0], [0.8, 0.0, 0.2], [0.1, 0.0, 0.9]])
    assert coverage(alpha).tolist() == pytest.approx([1.8, 0.1, 1.1])
    assert row_peak(alpha).tolist() == pytest.approx([0.9, 0.8, 0.9])
    assert row_entropy(np.array([[1.0, 0.0], [0.5, 0.5]])).tolist() == pytest.approx([0.0, 1.0])
    assert row_entropy(np.full((1, 4), 0.25)).tolist() == pytest.approx([2.0])
    assert unattended(alpha) == [1]
    # peaked attention on the article before a noun: the noun is unattended, though it may be translated
    article = np.array([[0.97, 0.03, 0.0], [0.96, 0.04, 0.0], [0.0, 0.02, 0.98]])
    assert unattended(article) == [1] and coverage(article)[1] < 0.25
    assert "not alignments" in NOT_ALIGNMENT
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
    assert "not alignments" in page


def test_the_exported_heatmap_keeps_every_label():
    source, target = ["a", "man", "zyx", "."], ["ein", "mann", "<unk>", "."]
    alpha = np.eye(4)
    figure = attention_figure(source, target, alpha, unknown_source=[2], unknown_target=[2])
    html = standalone_html(figure, "title")
    assert "<html>" in html[:100] and "plotly.js" in html.lower() and len(html) > 1_000_000  # works offline
    exported = [json.loads(array) for array in re.findall(r'"ticktext":(\[.*?\])', html)]
    assert list(figure.layout.xaxis2.ticktext) in exported and list(figure.layout.yaxis2.ticktext) in exported
    assert any("zyx</b> ⚠ OOV" in tick for ticks in exported for tick in ticks)


def test_repeated_tokens_keep_their_own_cells():
    fig = attention_figure([".", "a", "."], ["x", "x"], np.full((2, 3), 1 / 3))
    assert np.array(fig.data[0].z).shape == (2, 3)
