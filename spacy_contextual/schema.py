"""The one validator of typed records: a schema maps each key of a record to a ``Rule`` (what its value
must be, in words, and the test), and ``validate_section`` checks a record against it. A wrong type or
value is one line naming the record (a file, or ``file:line`` for one line of a JSONL), the field, the
value as given (cut short) and what is expected; a missing key and an unknown key are one line too.

Used by every reader of our JSON: a model's ``config.json`` (``formats/model_config.py``), the training
configs, the model catalog, the sense-labelled JSONL and the sentiment JSONL.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Collection
from typing import Any, NamedTuple

from .errors import ContextualError, ModelDirError


class Rule(NamedTuple):
    expects: str  # what the value must be, for the message
    test: Callable[[Any], bool]


def integer(minimum: int, maximum: int | None = None) -> Rule:
    return Rule(
        f"an integer >= {minimum}" + ("" if maximum is None else f" and <= {maximum:_}"),
        lambda v: (
            isinstance(v, int) and not isinstance(v, bool) and minimum <= v <= (v if maximum is None else maximum)
        ),
    )


def number(minimum: float, maximum: float) -> Rule:
    return Rule(
        f"a number in [{minimum}, {maximum}]",
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and minimum <= v <= maximum,
    )


def positive_or_null() -> Rule:
    return Rule(
        "a number > 0, or null for none",
        lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0),
    )


def one_of(*options: Any) -> Rule:
    return Rule(f"one of {', '.join(map(repr, options))}", lambda v: not isinstance(v, bool) and v in options)


def optional(rule: Rule) -> Rule:
    return Rule(f"{rule.expects}, or null", lambda v: v is None or rule.test(v))


def list_of(rule: Rule, what: str, minimum: int = 0) -> Rule:
    """A list of at least ``minimum`` items, each passing ``rule``; ``what`` names the items."""
    at_least = f"at least {minimum} " if minimum else ""
    return Rule(
        f"a list of {at_least}{what}", lambda v: isinstance(v, list) and len(v) >= minimum and all(map(rule.test, v))
    )


BOOLEAN = Rule("true or false", lambda v: isinstance(v, bool))
OBJECT = Rule("a JSON object", lambda v: isinstance(v, dict))
TEXT = Rule("a string", lambda v: isinstance(v, str))
ANY = Rule("any JSON value", lambda v: True)


def validate_section(
    values: Any,
    schema: dict[str, Any],
    source: str,
    prefix: str = "",
    other_keys: bool = False,
    required: Collection[str] | None = None,
    error: type[ContextualError] = ModelDirError,
) -> dict[str, Any]:
    """Every key of ``schema`` valid, and present unless ``required`` (default: every key) leaves it out;
    no other key unless ``other_keys`` (a file of another project's, whose other keys we do not read).
    A schema value that is a dict is a nested section. ``prefix`` names the section in messages, and
    ``error`` is the class raised."""
    if not isinstance(values, dict):
        where = f"{source}: {prefix.rstrip('.')}" if prefix else source
        raise error(f"{where} is {shown(values)}; expected a JSON object")
    for key, rule in schema.items():
        name = prefix + key
        if key not in values:
            if required is not None and key not in required:
                continue
            expects = "an object" if isinstance(rule, dict) else rule.expects
            raise error(f"{source} lacks the key {name!r} ({expects}); the file is incomplete or damaged")
        if isinstance(rule, dict):
            validate_section(values[key], rule, source, name + ".", error=error)
        elif not rule.test(values[key]):
            raise error(f"{source}: {name} is {shown(values[key])}; expected {rule.expects}")
    unknown = sorted(set(values) - set(schema))
    if unknown and not other_keys:
        raise error(
            f"{source} has unknown keys {[prefix + k for k in unknown][:10]}; known: {[prefix + k for k in schema]}"
        )
    return values


def shown(value: Any) -> str:
    """A value as a message shows it: a short repr (``reprlib``: long strings and lists are cut)."""
    return reprlib.repr(value)
