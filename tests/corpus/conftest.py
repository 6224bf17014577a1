"""The corpus job's fixtures: a tiny random ELMo, and the test module's ``LINES`` as a corpus file."""

import pytest
from util import tiny_bilm

from spacy_contextual.corpus.lines import Corpus
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder


@pytest.fixture(scope="module")
def elmo():
    return ElmoEmbedder(tiny_bilm())


@pytest.fixture
def corpus(request, tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(request.module.LINES) + "\n", encoding="utf-8")
    return Corpus(path)
