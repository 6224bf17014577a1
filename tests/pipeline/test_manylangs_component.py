"""An ELMoForManyLangs model in spaCy: ``spacy.blank(LANG)`` + the ``elmo`` component, listeners,
saving the pipeline (with the model's dictionaries) and loading it without the source files."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from util import MANYLANGS_FIXTURE, build_listener_pipeline, train_steps, write_manylangs_dir

from spacy_contextual.embedders import load_encoder
from spacy_contextual.layers import elmo_model_dir_loader

MODEL = MANYLANGS_FIXTURE / "model"
SENTENCES = json.loads((MANYLANGS_FIXTURE / "sentences.json").read_text(encoding="utf-8"))

pytestmark = pytest.mark.usefixtures("one_thread")


def blank_with_elmo(lang, model_dir, **config):
    nlp = spacy.blank(lang)
    nlp.add_pipe("elmo", config=config)
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(str(model_dir)))
    return nlp


def test_blank_multilingual_pipeline_matches_the_original():
    """Pre-tokenised Docs (one segment each) give the original's vectors."""
    nlp = blank_with_elmo("xx", MODEL)
    reference = np.load(MANYLANGS_FIXTURE / "reference_all.npz")
    for i in (0, 2, 4, 19, 33):
        doc = nlp(Doc(nlp.vocab, words=SENTENCES[i]))
        np.testing.assert_allclose(doc._.elmo_data.layers, reference[str(i)], atol=1e-5, rtol=1e-5)


def test_blank_german_text_is_tokenised_by_spacy():
    nlp = blank_with_elmo("de", MODEL)
    doc = nlp("Die Bank am Fluss ist geschlossen.")
    expected = load_encoder("elmo", MODEL).embed_sentences([[t.text for t in doc]])[0]
    assert [t.text for t in doc][-1] == "."
    np.testing.assert_allclose(doc._.elmo_data.layers, expected, atol=1e-5)


def test_saved_pipeline_keeps_the_dictionaries_and_needs_no_source(tmp_path):
    source = write_manylangs_dir(tmp_path / "source", word_dim=0)  # a character-only model
    nlp = blank_with_elmo("xx", source)
    text = "the bank of the river ."
    expected = nlp(text)._.elmo_data.layers
    nlp.to_disk(tmp_path / "pipeline")
    shutil.rmtree(source)
    loaded = spacy.load(tmp_path / "pipeline")
    np.testing.assert_array_equal(loaded(text)._.elmo_data.layers, expected)
    assert not list((tmp_path / "pipeline").rglob("*.pkl"))


def test_listeners_train_on_a_frozen_manylangs_model(tmp_path):
    nlp, examples, optimizer = build_listener_pipeline(write_manylangs_dir(tmp_path / "m"))
    losses = train_steps(nlp, examples, optimizer, 3)
    assert losses["tagger"] > 0 and np.isfinite(losses["tagger"])
    doc = nlp("I like green eggs")
    assert doc._.elmo_data.layers.shape == (3, 4, 16) and all(t.tag_ for t in doc)
