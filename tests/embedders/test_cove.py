"""The bundled CoVe embedder warns about sentences longer than any it was trained on."""

from __future__ import annotations

import gzip

import pytest
from util import DATA, cli

from spacy_contextual.mt_text import tokenize

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


def test_translate_warns_about_sentences_longer_than_any_it_was_trained_on(embedders, tmp_path):
    cove = embedders["cove"]
    longest = max(len(tokenize(line)) for line in gzip.open(DATA / "multi30k" / "train.en.gz", "rt", encoding="utf-8"))
    assert cove.longest_training_sentence == longest == 40
    long_line = " ".join(["a man rides a horse ."] * 334)  # 2,004 tokens
    with pytest.warns(UserWarning, match=r"sentence 2 has 2,004 tokens, more than .* \(40 tokens\)"):
        cove.translate(["A dog runs .", long_line], beam=1, max_length=20)
    source = tmp_path / "long.txt"
    source.write_text(f"A dog runs .\n{long_line}\n", encoding="utf-8")
    result = cli("translate", source, "--beam", "1", "--max-length", "20")
    assert result.exit_code == 0 and result.stderr.startswith("warning: sentence 2 has 2,004 tokens")
