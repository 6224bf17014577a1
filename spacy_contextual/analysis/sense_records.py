"""One record of a sense-labelled JSONL, and the one check of its types (``schema.py``)::

    {"tokens": ["the", "bank", "..."], "target": 1, "sense": "BANK1", "word": "bank", "id": "..."}

``tokens`` is a list of strings, ``target`` the index of the labelled token in it, ``sense`` and
``word`` strings; other keys (``id``) are kept and not read. The sense probe takes labelled instances
only (every field present, none null); the dashboard also takes records without a target or sense
(unlabelled sentences). A wrong type is one line naming the record (``file:line``) and the field.
"""

from __future__ import annotations

from typing import Any

from ..errors import ContextualError
from ..schema import TEXT, integer, list_of, optional, validate_section

RECORD = {
    "tokens": list_of(TEXT, "strings (the sentence's tokens)", minimum=1),
    "target": optional(integer(0)),
    "sense": optional(TEXT),
    "word": optional(TEXT),
}
LABELLED = {**RECORD, "target": integer(0), "sense": TEXT, "word": TEXT}


def check_record(
    item: Any, where: str, labelled: bool, error: type[ContextualError] = ContextualError
) -> dict[str, Any]:
    """``item`` if it is a record (``labelled``: with every field); else ``error`` naming ``where``."""
    schema = LABELLED if labelled else RECORD
    validate_section(item, schema, where, other_keys=True, required=None if labelled else ("tokens",), error=error)
    target, tokens = item.get("target"), item["tokens"]
    if target is not None and target >= len(tokens):
        raise error(f"{where}: target {target} is not an index into its {len(tokens)} tokens")
    return item
