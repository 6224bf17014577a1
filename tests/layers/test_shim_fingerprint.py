"""The encoder's fingerprint (SHA-256 of its config and weights) travels with the Doc data, and a
listener refuses Doc data computed by another model (a DocBin made with another pipeline) instead of
scoring it; the stored weights carry their SHA-256."""

from __future__ import annotations

import pytest
import spacy
import srsly
from spacy.tokens import DocBin
from util import build_listener_pipeline, tiny_bilm, tiny_elmo_dir, train_steps

from spacy_contextual.errors import ContextualError, ModelDirError
from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.layers.encoder import get_shim

TEXTS = ["I like green eggs", "Eat the blue ham"]


def fingerprint(nlp, name="elmo"):
    return get_shim(nlp.get_pipe(name).model).fingerprint()


@pytest.mark.timeout(120)
def test_fingerprint_follows_the_weights(tmp_path):
    nlp, examples, optimizer = build_listener_pipeline(tiny_elmo_dir(tmp_path / "a"), frozen=False)
    other, _, _ = build_listener_pipeline(save_bilm(tiny_bilm(seed=1), tmp_path / "b"))
    before = fingerprint(nlp)
    assert len(before) == 16 and before != fingerprint(other)
    nlp.to_disk(tmp_path / "saved")
    assert fingerprint(spacy.load(tmp_path / "saved")) == before
    train_steps(nlp, examples, optimizer, 3)  # fine-tuning (the third step is the first to move the biLM)
    after = fingerprint(nlp)
    assert after != before
    assert nlp(TEXTS[0])._.elmo_data.fingerprint == after  # and the listeners accept the new data
    assert nlp.get_pipe("tagger").model.get_ref("tok2vec").get_ref("listener").attrs["fingerprint"] == after


@pytest.mark.timeout(120)
def test_a_docbin_of_another_encoder_is_refused_naming_both(tmp_path):
    nlp, _, _ = build_listener_pipeline(tiny_elmo_dir(tmp_path / "tiny"))
    bundled = spacy.blank("en")
    bundled.add_pipe("elmo")
    bundled.initialize()
    foreign = DocBin(store_user_data=True, docs=bundled.pipe(TEXTS)).to_bytes()
    ours = DocBin(store_user_data=True, docs=nlp.pipe(TEXTS, disable=["tagger", "textcat"])).to_bytes()
    tagger = nlp.get_pipe("tagger")
    expected = [[t.tag_ for t in doc] for doc in nlp.pipe(TEXTS)]
    assert [[t.tag_ for t in tagger(doc)] for doc in DocBin().from_bytes(ours).get_docs(nlp.vocab)] == expected
    message = (
        rf"doc._.elmo_data was computed by another model \(fingerprint {fingerprint(bundled)}\) than this "
        rf"pipeline's 'elmo' \(fingerprint {fingerprint(nlp)}\)"
    )
    for doc in DocBin().from_bytes(foreign).get_docs(nlp.vocab):
        with pytest.raises(ContextualError, match=message):
            tagger(doc)


@pytest.mark.timeout(120)
def test_doc_data_without_a_fingerprint_is_refused_with_how_to_recompute_it(tmp_path):
    """Doc data written by an earlier version carries no fingerprint: refused, never used silently."""
    nlp, _, _ = build_listener_pipeline(tiny_elmo_dir(tmp_path / "tiny"))
    docs = list(nlp.pipe(TEXTS, disable=["tagger", "textcat"]))
    for doc in docs:
        doc._.elmo_data.fingerprint = None  # as an earlier version wrote it
    stored = DocBin(store_user_data=True, docs=docs).to_bytes()
    tagger = nlp.get_pipe("tagger")
    for doc in DocBin().from_bytes(stored).get_docs(nlp.vocab):
        with pytest.raises(ContextualError, match=r"carries no fingerprint .* run this pipeline's 'elmo' on the Docs"):
            tagger(doc)
        assert [t.tag_ for t in tagger(nlp.get_pipe("elmo")(doc))]  # recomputed: accepted


@pytest.mark.timeout(120)
def test_a_private_encoders_altered_weights_are_refused(tmp_path):
    """An encoder inside another component (``nlp.replace_listeners``) is stored in that component's
    model file with the SHA-256 of its weights."""
    nlp, _, _ = build_listener_pipeline(tiny_elmo_dir(tmp_path / "tiny"), pipeline=["elmo", "tagger"])
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    nlp.to_disk(tmp_path / "saved")
    (shim,) = [shim for node in nlp.get_pipe("tagger").model.walk() for shim in node.shims]
    state = srsly.msgpack_loads(shim.to_bytes())["state"]
    model_file = tmp_path / "saved" / "tagger" / "model"
    data = bytearray(model_file.read_bytes())
    at = data.find(state)
    assert at > 0
    data[at + len(state) // 2] ^= 0xFF
    model_file.write_bytes(bytes(data))
    with pytest.raises(ModelDirError, match="the ELMo biLM stored in the pipeline does not match the SHA-256 saved"):
        spacy.load(tmp_path / "saved")
