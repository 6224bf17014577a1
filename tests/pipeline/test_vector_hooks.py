"""The vector hooks on Docs read back from a DocBin, with the layer source the README names."""

from __future__ import annotations

import numpy as np
import pytest
from spacy.tokens import DocBin
from util import REPO, layers_of

from spacy_contextual.pipeline import layer_source, set_vector_hooks

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


def test_cove_vector_hooks_after_docbin_as_the_docs_say(pipelines):
    settings = (REPO / "docs" / "pipeline.md").read_text(encoding="utf-8")
    assert 'set_vector_hooks(doc, layer_source("cove_data"))' in settings
    nlp = pipelines["cove"]
    doc_bin = DocBin(store_user_data=True, docs=[nlp("A man rides a horse .")])
    doc = next(DocBin().from_bytes(doc_bin.to_bytes()).get_docs(nlp.vocab))
    with pytest.raises(ValueError, match="doc._.elmo_data is not set"):
        set_vector_hooks(doc)
        doc[1].vector  # noqa: B018
    set_vector_hooks(doc, layer_source("cove_data"))
    np.testing.assert_allclose(doc[1].vector, layers_of(doc, "cove")[:, 1].mean(axis=0), atol=1e-6)
