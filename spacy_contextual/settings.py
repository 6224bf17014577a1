"""The one reader of the package's environment variables (``SPACY_CONTEXTUAL_*``): each is read through
a function that knows its type and range, and a value outside them is one line naming the variable,
what it was set to and what it accepts.

* ``flag(name, default)``: a switch, ``0/false/off/no`` or ``1/true/on/yes`` (any case); unset or
  empty: the default.
* ``number(name, default, minimum, maximum, integer=False)``: a finite number in [minimum, maximum]
  (``_`` allowed as a digit separator, at most ``MAX_DIGITS`` characters); ``integer=True`` refuses a
  fraction rather than rounding it.
"""

from __future__ import annotations

import math
import os

from .errors import ContextualError, quoted

TRUE = ("1", "true", "on", "yes")
FALSE = ("0", "false", "off", "no")
MAX_DIGITS = 40  # longer text is not a setting; int() of thousands of digits is slow and then refused


def raw(name: str) -> str:
    """The variable's text, stripped ("" when unset)."""
    return os.environ.get(name, "").strip()


def flag(name: str, default: bool) -> bool:
    text = raw(name).lower()
    if not text:
        return default
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise ContextualError(
        f"{name}={quoted(raw(name))} is not a switch: set it to one of {'/'.join(TRUE)} (on) or "
        f"{'/'.join(FALSE)} (off), or unset it for the default ({'on' if default else 'off'})"
    )


def number(name: str, default: float, minimum: float, maximum: float, integer: bool = False) -> float:
    """The variable as a number in [minimum, maximum] (an int when ``integer``), else ``default``."""
    text = raw(name)
    if not text:
        return default
    value = _parse(text.replace("_", ""), integer) if len(text) <= MAX_DIGITS else None
    if value is None or not minimum <= value <= maximum:
        kind = "a whole number" if integer else "a number"
        raise ContextualError(
            f"{name}={quoted(text, 40)} is not {kind} from {minimum:,} to {maximum:,}: set one in that range, "
            f"or unset it for the default ({default:,})"
        )
    return value


def _parse(text: str, integer: bool) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    if integer:
        return int(value) if value == int(value) else None
    return value
