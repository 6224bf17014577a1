"""The ELMo paper's sense probe: exact numbers on a synthetic encoder; stratified sampling and folds,
the baseline, warnings and error bars on the bundled Senseval files; a real slice with a tiny biLM; the CLI."""

from __future__ import annotations

import gzip
import json
import zlib
from itertools import islice

import numpy as np
import pytest
from typer.testing import CliRunner
from util import DATA, tiny_bilm

from spacy_contextual.analysis.occurrences import demo_corpus
from spacy_contextual.analysis.sense_probe import (
    bootstrap_intervals,
    fold_ids,
    format_table,
    labelled_instances,
    probe_word,
    read_sense_file,
    sample_per_sense,
    sense_probe,
    sense_quotas,
)
from spacy_contextual.cli import app
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder

SENSES = DATA / "senses"


def synthetic_instances():
    """'bank': 30 x MONEY, 10 x RIVER; 'bass': 6 x FISH, 6 x MUSIC. The sense is told by a cue word."""
    items = []
    for i in range(40):
        sense = "MONEY" if i < 30 else "RIVER"
        cue = "cash" if sense == "MONEY" else "water"
        items.append(
            {"id": f"b{i}", "word": "bank", "tokens": ["the", "bank", cue, f"w{i}"], "target": 1, "sense": sense}
        )
    for i in range(12):
        sense = "FISH" if i % 2 else "MUSIC"
        cue = "water" if sense == "FISH" else "cash"
        items.append({"id": f"s{i}", "word": "bass", "tokens": ["a", "bass", cue], "target": 1, "sense": sense})
    return items


def synthetic_embed(sentences):
    """Layer 0: one vector for every token (no information). Layer 1: the cue word's direction plus
    small per-sentence noise (separates the senses). Layer 2: noise only."""
    out = []
    for tokens in sentences:
        rng = np.random.RandomState(len(" ".join(tokens)) + sum(map(ord, tokens[-1])))
        cue = np.array([1.0, 0.0, 0.0]) if "cash" in tokens else np.array([0.0, 1.0, 0.0])
        layers = np.zeros((3, len(tokens), 3), dtype=np.float32)
        layers[0] = [0.0, 0.0, 1.0]
        layers[1] = cue + 0.1 * rng.rand(3)
        layers[2] = 0.1 * rng.rand(len(tokens), 3)  # noise only
        out.append(layers)
    return out


def test_probe_gives_the_expected_numbers_on_a_synthetic_encoder():
    results = sense_probe(synthetic_instances(), synthetic_embed)
    bank, bass = results
    assert [r["word"] for r in results] == ["bank", "bass"]
    assert (bank["instances"], bank["senses"], bass["instances"], bass["senses"]) == (40, 2, 12, 2)
    # MONEY is the majority of every 4/5 training split: MFS = 30/40
    assert bank["mfs_accuracy"] == pytest.approx(0.75)
    # layer 0 ties every centroid: argmax picks the first sense name (MONEY): 30/40
    assert bank["layer_accuracy"][0] == pytest.approx(0.75)
    assert bank["layer_accuracy"][1] == 1.0 and bass["layer_accuracy"][1] == 1.0
    # bass: 6/6 split; the training MFS is whichever sense its 4 folds hold more of
    labels = np.array(["MUSIC" if i % 2 == 0 else "FISH" for i in range(12)])
    fold = fold_ids(labels, 5, 0)
    expected = 0
    for k in range(5):
        train = labels[fold != k]
        fish, music = (train == "FISH").sum(), (train == "MUSIC").sum()
        mfs = "FISH" if fish >= music else "MUSIC"  # ties go to the first name in sorted order
        expected += (labels[fold == k] == mfs).sum()
    assert bass["mfs_accuracy"] == pytest.approx(expected / 12)


def test_centroid_is_the_mean_and_similarity_is_cosine():
    # sense A vectors (1, 0) and (1, 0.2*k); sense B (0, 1): a test vector (5, 4) is nearer A's mean by cosine
    vectors = np.array(
        [
            [[1.0, 0.0]],
            [[1.0, 0.2]],
            [[1.0, 0.4]],
            [[0.0, 1.0]],
            [[0.1, 1.0]],
            [[0.0, 3.0]],
            [[5.0, 4.0]],
            [[3.0, 0.1]],
            [[0.2, 9.0]],
            [[1.0, 0.1]],
        ]
    )
    senses = ["A", "A", "A", "B", "B", "B", "A", "A", "B", "A"]
    result = probe_word(vectors, senses, folds=10)  # leave-one-out
    assert result["layer_accuracy"] == [1.0]
    assert result["mfs_accuracy"] == pytest.approx(0.6)


def test_probe_refuses_bad_input(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"word": "x", "tokens": ["a"], "target": 3, "sense": "S"}) + "\n")
    with pytest.raises(ValueError, match="not an index"):
        read_sense_file(bad)
    with pytest.raises(ValueError, match="cannot be split into 5 folds"):
        probe_word(np.zeros((3, 1, 2)), ["a", "b", "a"])


@pytest.fixture
def real_slice(tmp_path):
    """60 'hard' and 60 'serve' instances of the Senseval-2 data."""
    path = tmp_path / "slice.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for name in ("hard", "serve"):
            with gzip.open(SENSES / f"{name}.jsonl.gz", "rt", encoding="utf-8") as lines:
                out.writelines(islice(lines, 60))
    return path


def test_probe_runs_on_real_data_with_a_biLM(real_slice):
    embedder = ElmoEmbedder(tiny_bilm())
    results = sense_probe(read_sense_file(real_slice), embedder.embed_sentences)
    assert [r["word"] for r in results] == ["hard", "serve"]
    for r in results:
        assert r["instances"] == 60 and len(r["layer_accuracy"]) == 3
        assert all(0.0 <= a <= 1.0 for a in [r["mfs_accuracy"], *r["layer_accuracy"]])
    assert "layer 2" in format_table(results).splitlines()[0]
    named = sense_probe(read_sense_file(real_slice), embedder.embed_sentences, layer_labels=embedder.layer_labels)
    header = format_table(named).splitlines()[0]
    assert "char-CNN (type-level)" in header and "LSTM-1" in header and "LSTM-2" in header
    assert named[0]["layers"] == ["char-CNN", "LSTM-1", "LSTM-2"] and named[0]["type_level"] == [True, False, False]


def test_cli_prints_a_table_and_writes_json(real_slice, tiny_model_dir, tmp_path):
    out = tmp_path / "probe.json"
    result = CliRunner().invoke(
        app, ["sense-probe", str(real_slice), "--model", str(tiny_model_dir), "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "MFS" in result.output and "hard" in result.output
    data = json.loads(out.read_text())
    assert [d["word"] for d in data] == ["hard", "serve"]
    assert {"word", "instances", "senses", "mfs_accuracy", "layer_accuracy", "layer_interval", "warnings"} <= set(
        data[0]
    )
    assert data[0]["layers"] == ["char-CNN", "LSTM-1", "LSTM-2"]
    sampled = CliRunner().invoke(
        app, ["sense-probe", str(real_slice), "--model", str(tiny_model_dir), "--max-per-word", "20", "--seed", "3"]
    )
    assert sampled.exit_code == 0, sampled.output
    assert "20 of 60" in sampled.output and "char-CNN (type-level)" in sampled.output


@pytest.fixture(scope="module")
def senseval():
    """Both bundled Senseval-2 files: sorted by sense, so the first n lines of "hard" are all HARD1."""
    return read_sense_file(SENSES / "hard.jsonl.gz") + read_sense_file(SENSES / "serve.jsonl.gz")


def test_sampling_is_per_sense_seeded_and_never_the_first_n(senseval):
    first = [item for item in senseval if item["word"] == "hard"][:400]
    assert {item["sense"] for item in first} == {"HARD1"}  # what "first n" used to probe
    sample = sample_per_sense(senseval, 400, seed=0)
    for word, total in (("hard", 4333), ("serve", 4378)):
        items = [item for item in sample if item["word"] == word]
        everything = [item for item in senseval if item["word"] == word]
        assert len(items) == 400
        for sense in {item["sense"] for item in everything}:  # every sense, in its share (± 1)
            share = sum(item["sense"] == sense for item in everything) / total
            assert abs(sum(item["sense"] == sense for item in items) - 400 * share) <= 1
    assert sample == sample_per_sense(senseval, 400, seed=0)
    assert sample != sample_per_sense(senseval, 400, seed=1)
    assert sample_per_sense(senseval, None) == senseval


def test_quotas_keep_a_minimum_for_rare_senses():
    assert sense_quotas({"A": 990, "B": 10}, 100) == {"A": 95, "B": 5}  # 1 by share, raised to the minimum of 5
    assert sense_quotas({"A": 990, "B": 3}, 100) == {"A": 97, "B": 3}
    assert sense_quotas({"A": 5, "B": 3}, 100) == {"A": 5, "B": 3}
    assert sum(sense_quotas({"A": 500, "B": 300, "C": 200}, 77).values()) == 77


def test_folds_keep_the_sense_proportions():
    labels = np.array(["A"] * 53 + ["B"] * 31 + ["C"] * 7)
    folds = fold_ids(labels, 5, seed=0)
    for sense in "ABC":
        per_fold = np.bincount(folds[labels == sense], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1
    assert np.bincount(folds).max() - np.bincount(folds).min() <= 1


def embed_by_hash(sentences):
    """A deterministic stand-in encoder: token vectors from a hash (layer 0 by form, 1-2 by position too)."""
    out = []
    for tokens in sentences:
        layers = np.zeros((3, len(tokens), 8), dtype=np.float32)
        for i, token in enumerate(tokens):
            rng = np.random.RandomState(zlib.crc32(token.encode()))
            layers[0, i] = rng.randn(8)
            layers[1:, i] = rng.randn(2, 8) + np.random.RandomState(len(tokens) + i).randn(2, 8)
        out.append(layers)
    return out


def test_baseline_is_the_majority_share_of_the_training_folds(senseval):
    results = sense_probe(senseval, embed_by_hash, max_per_word=120)
    for result in results:
        assert result["senses"] > 1 and not result["warnings"]
        # stratified folds: the training-fold majority scores its share on the held-out folds
        assert result["mfs_accuracy"] >= result["majority_share"] - 1 / result["instances"]
        assert result["mfs_accuracy"] == pytest.approx(max(result["sense_counts"].values()) / result["instances"])
        low, high = result["mfs_interval"]
        assert low < result["mfs_accuracy"] < high
        for accuracy, (low, high) in zip(result["layer_accuracy"], result["layer_interval"], strict=True):
            assert low <= accuracy <= high


def test_warnings_for_one_sense_and_for_rare_senses():
    vectors = np.random.RandomState(0).randn(12, 2, 4)
    one = probe_word(vectors, ["A"] * 12, word="hard")
    assert one["warnings"] and "one sense (A)" in one["warnings"][0] and one["layer_accuracy"] == [1.0, 1.0]
    rare = probe_word(vectors, ["A"] * 9 + ["B"] * 3, word="bat")
    assert rare["warnings"] == [
        "'bat': B (3) has fewer than 5 instances: too few held-out predictions to trust the accuracy."
    ]
    assert not probe_word(vectors, ["A"] * 6 + ["B"] * 6)["warnings"]
    demo = labelled_instances(demo_corpus())
    warned = {r["word"] for r in sense_probe(demo, embed_by_hash) if r["warnings"]}
    assert warned == {"play"}  # play-game has 4 sentences


def test_bootstrap_intervals_narrow_with_more_instances():
    rng = np.random.RandomState(0)
    small, large = rng.rand(50, 1) < 0.7, rng.rand(5000, 1) < 0.7
    (low_s, high_s), (low_l, high_l) = bootstrap_intervals(small)[0], bootstrap_intervals(large)[0]
    assert low_s < small.mean() < high_s and low_l < large.mean() < high_l
    assert high_l - low_l < (high_s - low_s) / 5
