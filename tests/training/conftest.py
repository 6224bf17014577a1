"""Fixtures of the training tests: a tiny slice of the shared LM corpus (see util.tiny_pretrain_config)."""

from __future__ import annotations

import pytest
from util import DATA, write_slice

CORPUS = DATA / "lm_corpus"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    return write_slice(CORPUS / "train.txt.gz", root / "train.txt", 400), write_slice(
        CORPUS / "valid.txt.gz", root / "valid.txt", 60
    )
