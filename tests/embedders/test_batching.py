"""A sentence gets the same vectors alone or in any batch, with the bundled models."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from util import DATA, KINDS, SENTENCES

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


@pytest.mark.parametrize("kind", KINDS)
def test_a_sentence_alone_or_in_any_batch_gets_the_same_vectors(embedders, kind):
    """The same up to float32 rounding: the BLAS picks its kernels by matrix shape, so the batch a
    sentence shares moves the last bits; the bound is 1e-6 of the sentence's largest value (a few ulps)."""
    embedder = embedders[kind]
    with gzip.open(DATA / "lm_corpus" / "valid.txt.gz", "rt", encoding="utf-8") as handle:
        corpus = [line.split() for line, _ in zip(handle, range(40), strict=False) if line.split()]
    for sentence in [SENTENCES[0], *corpus[:6]]:
        alone = embedder.embed_sentences([sentence])[0]
        batch = [["A"] * 30, SENTENCES[1], sentence, ["Short", "."], *corpus[10:14]]
        bound = 1e-6 * np.abs(alone).max()
        for batched in (embedder.embed_sentences(batch)[2], embedder.embed_sentences(batch[::-1])[-3]):
            assert np.abs(batched - alone).max() <= bound, " ".join(sentence)
