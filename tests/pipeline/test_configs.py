"""Every shipped config trains for a few steps with ``python -m spacy train`` (tiny data, tiny ELMo),
the sentiment converter works, and ``spacy package`` builds an installable package."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import spacy
from model_server import model_dir_entry, write_catalog
from spacy.tokens import DocBin
from typer.testing import CliRunner
from util import DATA, REPO, tiny_bilm, tiny_cove_dir

from spacy_contextual.cli import app
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.hub.cache import HOME_ENV, OFFLINE_ENV
from spacy_contextual.hub.catalog import CATALOG_ENV
from spacy_contextual.layers import layer_weights

pytestmark = pytest.mark.integration  # processes, servers, spacy train or a browser

ROOT = REPO
CONFIGS = ROOT / "configs"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    with gzip.open(DATA / "ud_english_ewt" / "dev.conllu.gz", "rt", encoding="utf-8") as f:
        sentences = f.read().split("\n\n")[:12]
    (root / "ud.conllu").write_text("\n\n".join(sentences) + "\n\n", encoding="utf-8")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "spacy",
            "convert",
            str(root / "ud.conllu"),
            str(root),
            "--converter",
            "conllu",
            "-n",
            "4",
        ],
        check=True,
        capture_output=True,
        env=ENV,
    )
    nlp = spacy.blank("en")
    reviews = DocBin()
    for text, label in [("a fine , moving film .\nloved it .", "pos"), ("dull and far too long .", "neg")] * 2:
        doc = nlp.make_doc(text)
        doc.cats = {"pos": float(label == "pos"), "neg": float(label == "neg")}
        reviews.add(doc)
    reviews.to_disk(root / "reviews.spacy")
    elmo = save_bilm(tiny_bilm(), root / "tiny_elmo")
    cove = tiny_cove_dir(root / "tiny_cove")
    return {"tagger": root / "ud.spacy", "textcat": root / "reviews.spacy", "elmo": elmo, "cove": cove}


def spacy_train(config: Path, train: Path, output: Path, *overrides: str, env=ENV) -> subprocess.CompletedProcess:
    command = [
        sys.executable, "-m", "spacy", "train", str(config), "--output", str(output),
        "--paths.train", str(train), "--paths.dev", str(train),
        "--training.max_steps", "2", "--training.eval_frequency", "1", *overrides,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, env=env)


SHIPPED = [
    "elmo_tagger", "elmo_textcat", "cove_tagger", "cove_textcat", "baseline_tagger", "baseline_textcat", "elmo_minimal",
]  # fmt: skip
TASKS = {"minimal": "tagger"}  # the minimal config trains a tagger
WEIGHTS = {"elmo_minimal": "--components.elmo.model.name"}  # it names its weights in the model block


def test_every_shipped_config_is_trained_here():
    assert sorted(SHIPPED) == sorted(path.stem for path in CONFIGS.glob("*.cfg"))


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_config_trains(name, data, tmp_path):
    encoder, variant = name.split("_")
    task = TASKS.get(variant, variant)
    weights = WEIGHTS.get(name, f"--paths.{encoder}_model")
    overrides = [weights, str(data[encoder])] if encoder != "baseline" else []
    result = spacy_train(CONFIGS / f"{name}.cfg", data[task], tmp_path, *overrides)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    nlp = spacy.load(tmp_path / "model-last")
    if encoder != "baseline":
        for component in nlp.get_pipe(encoder).listening_components:
            mix = layer_weights(nlp.get_pipe(component).model.get_ref("tok2vec").get_ref("layer_mix"))
            assert len(mix["weights"]) == (3 if encoder == "elmo" else 2)  # CoVe: GloVe is concatenated
    doc = nlp("The movie was great .")
    assert doc.cats or doc[0].tag_


@pytest.mark.timeout(300)
def test_the_minimal_config_trains_with_a_catalog_name_and_loads_offline(data, tmp_path, home, server, monkeypatch):
    catalog = write_catalog(tmp_path / "catalog.json", {"ours": model_dir_entry(server, "elmo", data["elmo"], "ours")})
    env = {**ENV, CATALOG_ENV: str(catalog), HOME_ENV: str(home)}
    env.pop(OFFLINE_ENV, None)
    overrides = ["--components.elmo.model.name", "ours", "--corpora.train.limit", "4"]
    result = spacy_train(CONFIGS / "elmo_minimal.cfg", data["tagger"], tmp_path / "out", *overrides, env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert server.requests["ours/model.safetensors"] == 1
    saved = tmp_path / "out" / "model-last"
    assert 'name = "ours"' in (saved / "config.cfg").read_text(encoding="utf-8")

    shutil.rmtree(home)  # offline, without the cache or the catalog: the saved pipeline holds the weights
    monkeypatch.setenv(OFFLINE_ENV, "1")
    monkeypatch.setenv(CATALOG_ENV, "")
    nlp = spacy.load(saved)
    words = ["The", "bank", "raised", "its", "rates", "."]
    expected = ElmoEmbedder.load(data["elmo"]).embed_sentences([words])[0]
    np.testing.assert_allclose(nlp(" ".join(words))._.elmo_data.layers, expected, atol=1e-5)
    assert nlp(" ".join(words))[0].tag_


def test_every_shipped_config_has_the_pytorch_allocator():
    for path in CONFIGS.glob("*.cfg"):
        assert spacy.util.load_config(path)["system"]["gpu_allocator"] == "pytorch", path.name


def test_convert_sentiment(tmp_path):
    result = CliRunner().invoke(
        app, ["convert-sentiment", str(DATA / "sentiment" / "movie_reviews.jsonl.gz"), str(tmp_path), "--limit", "3"]
    )
    assert result.exit_code == 0, result.output
    nlp = spacy.blank("en")
    for split in ("train", "dev", "test"):
        docs = list(DocBin().from_disk(tmp_path / f"{split}.spacy").get_docs(nlp.vocab))
        assert len(docs) == 3
        assert all(sorted(doc.cats) == ["neg", "pos"] and sum(doc.cats.values()) == 1.0 for doc in docs)


def test_convert_text_writes_one_sentence_per_line(tmp_path):
    nlp = spacy.blank("en")
    with_sentences = nlp.make_doc("The bank rose.  It closed early.")
    for token in with_sentences:
        token.is_sent_start = token.i == 0 or with_sentences[token.i - 1].text == "."
    doc_bin = DocBin(docs=[with_sentences, nlp.make_doc("no boundaries here")])
    doc_bin.to_disk(tmp_path / "corpus.spacy")
    result = CliRunner().invoke(app, ["convert-text", str(tmp_path / "corpus.spacy"), str(tmp_path / "corpus.txt.gz")])
    assert result.exit_code == 0, result.output
    with gzip.open(tmp_path / "corpus.txt.gz", "rt", encoding="utf-8") as lines:
        assert lines.read().splitlines() == ["The bank rose .", "It closed early .", "no boundaries here"]


def test_convert_text_rejects_an_empty_corpus(tmp_path):
    DocBin(docs=[spacy.blank("en").make_doc("")]).to_disk(tmp_path / "empty.spacy")
    result = CliRunner().invoke(app, ["convert-text", str(tmp_path / "empty.spacy"), str(tmp_path / "out.txt")])
    assert result.exit_code != 0 and "holds no tokens" in result.output


@pytest.mark.slow
def test_spacy_package_builds_an_installable_package(data, tmp_path):
    result = spacy_train(
        CONFIGS / "elmo_tagger.cfg", data["tagger"], tmp_path / "trained", "--paths.elmo_model", str(data["elmo"])
    )
    assert result.returncode == 0, result.stderr[-3000:]
    packages = tmp_path / "packages"
    packages.mkdir()
    subprocess.run(
        [sys.executable, "-m", "spacy", "package", str(tmp_path / "trained" / "model-last"), str(packages),
         "--name", "elmo_tiny", "--version", "0.0.1", "--build", "sdist"],
        check=True, capture_output=True, env=ENV,
    )  # fmt: skip
    sdist = next(packages.glob("**/dist/*.tar.gz"))
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "--target",
            str(target),
            str(sdist),
        ],
        check=True,
        capture_output=True,
        env=ENV,
    )
    probe = (
        "import en_elmo_tiny, json; nlp = en_elmo_tiny.load(); doc = nlp('The cat sat .');"
        "print(json.dumps([doc._.elmo_data.layers.shape, nlp.meta['requirements']]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        check=True,
        capture_output=True,
        text=True,
        env={**ENV, "PYTHONPATH": str(target)},
    )
    shape, requirements = __import__("json").loads(out.stdout.strip().splitlines()[-1])
    assert shape == [3, 4, 32]
    assert any(req.startswith("spacy-contextual") for req in requirements)
