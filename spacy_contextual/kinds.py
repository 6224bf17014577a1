"""The two encoder kinds, ``KINDS`` ("elmo", "cove"), and how a message names them: ``a_model("elmo")`` is
"an ELMo model", ``a_model("cove")`` "a CoVe model" (the article follows the word as it is spoken)."""

from __future__ import annotations

from .errors import quoted

KINDS = ("elmo", "cove")
NAMES = {"elmo": "ELMo", "cove": "CoVe"}
AN_NAMES = ("ELMo",)  # spoken with a vowel first: "an ELMo"


def kind_name(kind: str) -> str:
    """ "ELMo", "CoVe"; any other kind as it was written."""
    return NAMES.get(kind, str(kind))


def a_model(kind: str) -> str:
    """ "an ELMo model", "a CoVe model"; another kind (read from a file) quoted: "a 'bert' model"."""
    if isinstance(kind, str) and kind in NAMES:  # a kind read from a file may be any JSON value
        name = NAMES[kind]
        return f"{'an' if name in AN_NAMES else 'a'} {name} model"
    text = quoted(kind, 60)
    return f"{'an' if text[1:2].lower() in tuple('aeio') else 'a'} {text} model"
