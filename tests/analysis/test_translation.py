"""One sentence through the MT model: limits, <unk> copies named, the bundled model's audit."""

import numpy as np
import pytest
from util import tiny_cove_mt_dir

from spacy_contextual.analysis.attention import unattended
from spacy_contextual.analysis.model_loading import load_model
from spacy_contextual.analysis.occurrences import InputError
from spacy_contextual.analysis.translation import MAX_SOURCE_CHARS, Translation, source_tokens, translate


@pytest.fixture(scope="module")
def tiny_cove(tmp_path_factory):
    return load_model("cove", str(tiny_cove_mt_dir(tmp_path_factory.mktemp("cove") / "mt")))


def test_limits_are_refused_with_the_limit():
    with pytest.raises(InputError, match="empty"):
        source_tokens("  ")
    with pytest.raises(InputError, match=f"the limit is {MAX_SOURCE_CHARS}"):
        source_tokens("a" * (MAX_SOURCE_CHARS + 1))
    with pytest.raises(InputError, match="tokens; the limit is 60"):
        source_tokens("a " * 61)
    assert source_tokens("A Man.") == ["a", "man", "."]


def test_each_unk_says_which_source_word_it_copied():
    result = Translation(
        ["a", "zebra", "runs"], ["ein", "zebra", "läuft"], np.array([[1, 0, 0], [0.1, 0.8, 0.1], [0, 0, 1.0]]), [1],
        {1: 1},
    )  # fmt: skip
    assert result.unknown_target == [1] and result.text == "ein zebra läuft"
    assert result.copy_notes() == ["'zebra' (German token 2) copied from the English 'zebra' (token 2)"]


def test_a_translation_carries_its_attention_and_oov_words(tiny_cove):
    result = translate(tiny_cove, "A man plays the zyxophone.")
    assert 4 in result.unknown_source and result.source[4] == "zyxophone"
    assert all(result.source[j] not in tiny_cove.vocab.index for j in result.unknown_source)
    assert result.attention.shape == (len(result.tokens), len(result.source))
    np.testing.assert_allclose(result.attention.sum(axis=1), 1.0, rtol=1e-5)
    for target, source in result.copied.items():
        assert result.tokens[target] == result.source[source] == result.source[result.attention[target].argmax()]


def test_the_bundled_model_translates_the_pages_example_and_its_attention_is_peaked():
    from spacy_contextual.dashboard.cove_attention import DEFAULT_SENTENCE

    result = translate(load_model("cove", "default"), DEFAULT_SENTENCE)
    assert "blau" in result.text.lower() and "gitarre" in result.text.lower()
    assert result.attention.max(axis=1).mean() > 0.8
    assert all(0 <= j < len(result.source) for j in unattended(result.attention))
