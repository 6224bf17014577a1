"""The one reader of the package's environment variables (``SPACY_CONTEXTUAL_*``): each is declared here,
in ``VARIABLES``, with its type, its range and its default, and read with ``VARIABLE.get()``. A value
outside its type or range is one line naming the variable, what it was set to and what it accepts.

* ``Flag``: a switch, ``0/false/off/no`` or ``1/true/on/yes`` (any case).
* ``Number``: a finite number in [minimum, maximum] (``_`` allowed as a digit separator, at most
  ``MAX_DIGITS`` characters); an integer one refuses a fraction rather than rounding it. The maxima are
  what the code can use (a socket's wait, a timer thread's), never more.
* ``Location`` / ``Locations``: a path (``~`` expanded, or one line where there is no such home), or
  several separated by ``os.pathsep``.
* ``Text``: a name or path, at most ``MAX_TEXT`` characters, no control characters.

Unset or empty: the default. ``flag(name, default)`` and ``number(...)`` are the parsers, for a caller
that reads a variable of its own.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from .errors import ContextualError, quoted
from .user_paths import MAX_PATH_BYTES, expand_user

TRUE = ("1", "true", "on", "yes")
FALSE = ("0", "false", "off", "no")
MAX_DIGITS = 40  # longer text is not a setting; int() of thousands of digits is slow and then refused
MAX_TEXT = MAX_PATH_BYTES
LONGEST_POLL_S = (2**31 - 1) // 1000  # a socket's wait goes to poll() in whole milliseconds, a C int
LONGEST_TIMER_S = int(threading.TIMEOUT_MAX)  # the longest a timer thread can wait


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
        f"{name}={quoted(raw(name), 40)} is not a switch: set it to one of {'/'.join(TRUE)} (on) or "
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


def text(name: str, default: str) -> str:
    """The variable as one name or path: at most ``MAX_TEXT`` characters, none of them a control character."""
    value = raw(name)
    if not value:
        return default
    if len(value) > MAX_TEXT or not value.isprintable():
        raise ContextualError(
            f"{name}={quoted(value, 40)} is not a name or path ({len(value):,} characters"
            f"{'' if value.isprintable() else ', with control characters'}; at most {MAX_TEXT:,} printable "
            "ones): set it to a name or path, or unset it"
        )
    return value


def location(name: str) -> Path | None:
    """The variable as a path, ``~`` expanded; None when unset."""
    value = text(name, "")
    return expand_user(value, name) if value else None


@dataclass(frozen=True)
class Flag:
    name: str
    default: bool
    about: str

    def get(self) -> bool:
        return flag(self.name, self.default)

    @property
    def accepts(self) -> str:
        return f"{'/'.join(TRUE)} or {'/'.join(FALSE)} (default {'on' if self.default else 'off'})"


@dataclass(frozen=True)
class Number:
    name: str
    default: float
    minimum: float
    maximum: float
    about: str
    integer: bool = False

    def get(self) -> float:
        return number(self.name, self.default, self.minimum, self.maximum, self.integer)

    @property
    def accepts(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        return f"{kind} from {self.minimum:,} to {self.maximum:,} (default {self.default:,})"


@dataclass(frozen=True)
class Text:
    name: str
    default: str
    about: str

    def get(self) -> str:
        return text(self.name, self.default)

    @property
    def accepts(self) -> str:
        return f"a name or path (default {self.default!r})"


@dataclass(frozen=True)
class Location:
    name: str
    about: str

    def get(self) -> Path | None:
        return location(self.name)

    @property
    def accepts(self) -> str:
        return "a path (`~` is expanded)"


@dataclass(frozen=True)
class Locations:
    name: str
    about: str

    def get(self) -> list[Path]:
        value = text(self.name, "")
        return [expand_user(part, self.name) for part in value.split(os.pathsep) if part.strip()]

    @property
    def accepts(self) -> str:
        return f"paths separated by {os.pathsep!r}"


GiB = 2**30
TIMEOUT = Number(
    "SPACY_CONTEXTUAL_TIMEOUT", 60, 0.001, LONGEST_POLL_S, "seconds to wait for a server's next bytes (connect, read)"
)
DOWNLOAD_DEADLINE = Number(
    "SPACY_CONTEXTUAL_DOWNLOAD_DEADLINE", 3600, 0.001, LONGEST_TIMER_S, "seconds one downloaded file may take"
)
MAX_DOWNLOAD_BYTES = Number(
    "SPACY_CONTEXTUAL_MAX_DOWNLOAD_BYTES", 4 * GiB, 1, 2**62, "bytes of a file whose size the catalog does not publish",
    integer=True,
)  # fmt: skip
MAX_UNPACKED_BYTES = Number(
    "SPACY_CONTEXTUAL_MAX_UNPACKED_BYTES", 16 * GiB, 1, 2**62, "bytes an archive may unpack to", integer=True
)
LOCK_WAIT = Number(
    "SPACY_CONTEXTUAL_LOCK_WAIT", 3600, 0, LONGEST_TIMER_S, "seconds to wait for another process fetching a model"
)
OFFLINE = Flag("SPACY_CONTEXTUAL_OFFLINE", False, "forbid every download (a model must be in the cache)")
HOME = Location("SPACY_CONTEXTUAL_HOME", "the model cache (default: the platform's user cache folder)")
CATALOG = Location("SPACY_CONTEXTUAL_CATALOG", "a catalog JSON file adding to the shipped one (as --catalog)")
DEBUG = Flag("SPACY_CONTEXTUAL_DEBUG", False, "show an error's traceback instead of its one line (as --debug)")
ALLOW_PACKAGE_WRITE = Flag(
    "SPACY_CONTEXTUAL_ALLOW_PACKAGE_WRITE", False, "allow writing into the package's bundled models"
)
FUSED_CELL = Flag("SPACY_CONTEXTUAL_FUSED_CELL", True, "use the built C++ LSTM cell on the CPU")
ELMO_MODEL = Text("SPACY_CONTEXTUAL_ELMO_MODEL", "default", "the dashboard's ELMo model (a name or folder)")
COVE_MODEL = Text("SPACY_CONTEXTUAL_COVE_MODEL", "default", "the dashboard's CoVe model (a name or folder)")
PIPELINE = Locations("SPACY_CONTEXTUAL_PIPELINE", "the dashboard's trained pipelines (Layer weights page)")
SENSE_DATA = Location("SPACY_CONTEXTUAL_SENSE_DATA", "the folder of sense-labelled JSONL files the dashboard lists")

VARIABLES = {
    setting.name: setting
    for setting in (
        TIMEOUT,
        DOWNLOAD_DEADLINE,
        MAX_DOWNLOAD_BYTES,
        MAX_UNPACKED_BYTES,
        LOCK_WAIT,
        OFFLINE,
        HOME,
        CATALOG,
        DEBUG,
        ALLOW_PACKAGE_WRITE,
        FUSED_CELL,
        ELMO_MODEL,
        COVE_MODEL,
        PIPELINE,
        SENSE_DATA,
    )
}
