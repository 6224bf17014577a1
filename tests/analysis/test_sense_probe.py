"""The ELMo paper's sense probe: exact numbers on a synthetic encoder, a real slice with a tiny biLM,
and the CLI."""

from __future__ import annotations

import gzip
import json
from itertools import islice

import numpy as np
import pytest
from typer.testing import CliRunner
from util import DATA, tiny_bilm

from spacy_contextual.analysis.sense_probe import fold_ids, format_table, probe_word, read_sense_file, sense_probe
from spacy_contextual.cli import app
from spacy_contextual.embedders.elmo import ElmoEmbedder

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
    fold = fold_ids(12, 5, 0)
    labels = np.array(["MUSIC" if i % 2 == 0 else "FISH" for i in range(12)])
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


def test_cli_prints_a_table_and_writes_json(real_slice, tiny_model_dir, tmp_path):
    out = tmp_path / "probe.json"
    result = CliRunner().invoke(
        app, ["sense-probe", str(real_slice), "--model", str(tiny_model_dir), "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "MFS" in result.output and "hard" in result.output
    data = json.loads(out.read_text())
    assert [d["word"] for d in data] == ["hard", "serve"]
    assert set(data[0]) == {"word", "instances", "senses", "mfs_accuracy", "layer_accuracy"}
