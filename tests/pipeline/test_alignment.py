"""Retokenizing after the encoder keeps every token's rows aligned (``pipeline/alignment.py``): a merged
token takes the row of its last token (spaCy's rule for ``doc.tensor``), every piece of a split token
takes that token's row; the vector hooks, ``doc._.<kind>_data`` and the listeners agree; what cannot
be aligned is a clear error. With the bundled ELMo and CoVe, and a tiny listener pipeline."""

from __future__ import annotations

import numpy as np
import pytest
import spacy
from spacy.pipeline.functions import merge_entities, merge_noun_chunks
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab
from util import build_listener_pipeline, tiny_elmo_dir

from spacy_contextual.errors import ContextualError
from spacy_contextual.pipeline import ContextualData
from spacy_contextual.pipeline.alignment import aligned_rows

TEXT = "I love New York and it is big ."


def spans(*pairs):
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def test_rows_of_merged_split_and_unchanged_tokens():
    old = spans((0, 1), (2, 6), (7, 10), (11, 15), (16, 17))  # I love New York .
    merged = spans((0, 1), (2, 6), (7, 15), (16, 17))
    assert aligned_rows(old, merged, "rows").tolist() == [0, 1, 3, 4]
    split = spans((0, 1), (2, 4), (4, 6), (7, 10), (11, 15), (16, 17))  # lo|ve
    assert aligned_rows(old, split, "rows").tolist() == [0, 1, 1, 2, 3, 4]
    assert aligned_rows(old, old, "rows").tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    "new",
    [
        spans((0, 1), (2, 8), (8, 10), (11, 15), (16, 17)),  # straddles "love" and "New"
        spans((0, 1), (2, 6), (7, 12), (12, 15), (16, 17)),  # "New" and part of "York"
        spans((0, 1), (2, 6), (6, 7), (7, 10), (11, 15), (16, 17)),  # a token in the whitespace
    ],
)
def test_tokens_that_cannot_be_aligned_are_refused(new):
    old = spans((0, 1), (2, 6), (7, 10), (11, 15), (16, 17))
    with pytest.raises(ContextualError, match="cannot be aligned with the Doc's token at characters"):
        aligned_rows(old, new, "rows")


def numbered_doc(words):
    """A Doc whose data row i holds i in every layer and feature."""
    doc = Doc(Vocab(), words=words)
    rows = np.arange(len(words), dtype=np.float32)[None, :, None]
    doc._.elmo_data = ContextualData(np.broadcast_to(rows, (2, len(words), 3)).copy(), ["token", "lstm1"])
    return doc


def row_ids(doc) -> list[int]:
    return doc._.elmo_data.layers[0, :, 0].astype(int).tolist()


def test_merges_and_splits_in_one_retokenize_and_after_a_docbin():
    doc = numbered_doc(["I", "love", "New", "York", "and", "it", "is", "big", "."])
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[2:4])
        retokenizer.split(doc[1], ["lo", "ve"], heads=[(doc[1], 1), doc[0]])
    assert [t.text for t in doc] == ["I", "lo", "ve", "New York", "and", "it", "is", "big", "."]
    assert row_ids(doc) == [0, 1, 1, 3, 4, 5, 6, 7, 8]
    (stored,) = DocBin(store_user_data=True, docs=[doc]).get_docs(Vocab())
    assert row_ids(stored) == [0, 1, 1, 3, 4, 5, 6, 7, 8]
    with stored.retokenize() as retokenizer:
        retokenizer.merge(stored[4:9])
    assert row_ids(stored) == [0, 1, 1, 3, 8]


def test_data_of_another_text_or_without_offsets_is_refused():
    doc = numbered_doc(["I", "love", "New", "York"])
    other = Doc(Vocab(), words=["We", "like", "Old", "Yorkshire"])
    other.user_data[("._.", "elmo_data", None, None)] = doc._.elmo_data
    with pytest.raises(ContextualError, match="computed for another text"):
        other._.get("elmo_data")
    legacy = ContextualData.from_dict({**doc._.elmo_data.to_dict(), "token_offsets": None})
    doc.user_data[("._.", "elmo_data", None, None)] = legacy  # as a DocBin of an earlier version reads back
    assert doc._.get("elmo_data") is legacy  # usable while the token count matches
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[2:4])
    with pytest.raises(ContextualError, match="has rows for 4 tokens but the Doc has 3"):
        doc._.get("elmo_data")


# -- the bundled models ------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["elmo", "cove"])
def bundled(request):
    """(kind, nlp: entity_ruler -> <kind>, with set_doc_tensor)"""
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    nlp.add_pipe(request.param, config={"set_doc_tensor": True})
    nlp.initialize()
    ruler.add_patterns([{"label": "GPE", "pattern": "New York"}])
    return request.param, nlp


@pytest.mark.timeout(120)
def test_merge_entities_keeps_every_token_on_its_own_rows(bundled):
    kind, nlp = bundled
    before = nlp(TEXT)
    reference = {token.text: before._.get(f"{kind}_data").layers[:, token.i] for token in before}
    reference["New York"] = reference["York"]  # spaCy's rule: the last row stands for the merged token
    doc = merge_entities(nlp(TEXT))
    assert [t.text for t in doc] == ["I", "love", "New York", "and", "it", "is", "big", "."]
    data = doc._.get(f"{kind}_data")
    for token in doc:
        np.testing.assert_array_equal(data.layers[:, token.i], reference[token.text])
        np.testing.assert_allclose(token.vector, reference[token.text].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(doc.tensor, data.token_vectors(), rtol=1e-6)  # spaCy's own tensor rows agree
    np.testing.assert_allclose(doc[4:6].vector, data.token_vectors()[4:6].mean(axis=0), rtol=1e-6)


@pytest.mark.timeout(120)
def test_noun_chunk_merges_and_a_split_with_the_bundled_models(bundled):
    kind, nlp = bundled
    text = "The old man saw a big dog near the river bank ."
    before = nlp(text)
    rows = before._.get(f"{kind}_data").layers
    doc = nlp(text)
    assert doc.vector.shape and doc[6].similarity(doc[10]) < 1  # the hooks have been read before retokenizing
    with doc.retokenize() as retokenizer:  # what merge_noun_chunks does with a parser's noun chunks
        for chunk in (doc[0:3], doc[4:7], doc[8:11]):
            retokenizer.merge(chunk)
    with doc.retokenize() as retokenizer:
        retokenizer.split(doc[1], ["sa", "w"], heads=[(doc[1], 1), doc[0]])
    assert [t.text for t in doc] == ["The old man", "sa", "w", "a big dog", "near", "the river bank", "."]
    expected = rows[:, [2, 3, 3, 6, 7, 10, 11]]
    np.testing.assert_array_equal(doc._.get(f"{kind}_data").layers, expected)
    np.testing.assert_allclose(np.stack([t.vector for t in doc]), expected.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(doc[3:6].vector, expected.mean(axis=0)[3:6].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(doc.vector, expected.mean(axis=0).mean(axis=0), rtol=1e-6)


@pytest.mark.timeout(120)
def test_merge_noun_chunks_on_a_parsed_doc(bundled):
    kind, nlp = bundled
    words = ["The", "old", "man", "saw", "a", "big", "dog", "."]
    heads, deps = [2, 2, 3, 3, 6, 6, 3, 3], ["det", "amod", "nsubj", "ROOT", "det", "amod", "dobj", "punct"]
    pos = ["DET", "ADJ", "NOUN", "VERB", "DET", "ADJ", "NOUN", "PUNCT"]
    doc = nlp.get_pipe(kind)(Doc(nlp.vocab, words=words, heads=heads, deps=deps, pos=pos))  # as after a parser
    rows = doc._.get(f"{kind}_data").layers
    doc = merge_noun_chunks(doc)
    assert [t.text for t in doc] == ["The old man", "saw", "a big dog", "."]
    np.testing.assert_array_equal(doc._.get(f"{kind}_data").layers, rows[:, [2, 3, 6, 7]])
    np.testing.assert_allclose(doc[2].vector, rows[:, 6].mean(axis=0), rtol=1e-6)


@pytest.mark.timeout(120)
def test_doc_tensor_hooks_after_a_split_are_a_clear_error(bundled):
    kind, _ = bundled
    nlp = spacy.blank("en")
    nlp.add_pipe(kind, config={"store": "none", "set_doc_tensor": True})
    nlp.initialize()
    doc = nlp("We saw it .")
    with doc.retokenize() as retokenizer:
        retokenizer.split(doc[1], ["s", "aw"], heads=[(doc[1], 1), doc[0]])
    with pytest.raises(ContextualError, match=r"doc.tensor has 6 rows for 5 tokens.*store = \"all\" or \"mixed\""):
        doc[1].similarity(doc[0])


# -- listeners -----------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_listener_after_a_merge_sees_aligned_rows(tmp_path):
    nlp, _, _ = build_listener_pipeline(tiny_elmo_dir(tmp_path / "elmo"), pipeline=["elmo", "tagger"])
    ruler = nlp.add_pipe("entity_ruler", first=True)
    ruler.add_patterns([{"label": "GPE", "pattern": "New York"}])
    nlp.add_pipe("merge_entities", before="tagger")
    with nlp.select_pipes(enable=["entity_ruler", "elmo"]):
        rows = nlp(TEXT)._.elmo_data.layers
    doc = nlp(TEXT)
    assert doc[2].text == "New York"
    listener = nlp.get_pipe("tagger").model.get_ref("tok2vec").get_ref("listener")
    (seen,) = listener.predict([doc])
    np.testing.assert_array_equal(seen, rows[:, [0, 1, 3, 4, 5, 6, 7, 8]])
    reference = Doc(nlp.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc])
    computed = doc._.elmo_data
    reference._.elmo_data = ContextualData(
        rows[:, [0, 1, 3, 4, 5, 6, 7, 8]], computed.layer_names, fingerprint=computed.fingerprint
    )
    assert [t.tag_ for t in doc] == [t.tag_ for t in nlp.get_pipe("tagger")(reference)]
