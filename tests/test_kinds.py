"""The article follows the word: "an ELMo model", "a CoVe model", wherever a message names a model's kind
(``kinds.a_model``); no message builds "a {kind}" itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spacy_contextual.kinds import KINDS, a_model, kind_name

PACKAGE = Path(__file__).resolve().parent.parent / "spacy_contextual"
#: an article written before a model's kind or encoder put into a message: the article cannot follow the word
HAND_MADE_ARTICLE = re.compile(r"\b[Aa]n? \{[^}]*\b(kind|encoder)\b[^}]*\} model")


@pytest.mark.parametrize(
    ("kind", "phrase"),
    [
        ("elmo", "an ELMo model"),
        ("cove", "a CoVe model"),
        ("cove-mt", "a 'cove-mt' model"),
        ("elmo-x", "an 'elmo-x' model"),
    ],
)
def test_the_article_follows_the_word(kind, phrase):
    assert a_model(kind) == phrase


def test_every_kind_has_its_written_name():
    assert [kind_name(kind) for kind in KINDS] == ["ELMo", "CoVe"]


def test_no_message_puts_an_article_before_a_kind_by_hand():
    found = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HAND_MADE_ARTICLE.search(line)
    ]
    assert not found, "use kinds.a_model(kind): " + "; ".join(found)
