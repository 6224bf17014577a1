"""The limits of a download, each a number of seconds or bytes that an environment variable can change.

* ``SPACY_CONTEXTUAL_TIMEOUT`` (60 s): the longest wait for the server's next bytes (connect, each read).
* ``SPACY_CONTEXTUAL_DOWNLOAD_DEADLINE`` (3,600 s): the longest a whole file may take.
* ``SPACY_CONTEXTUAL_MAX_DOWNLOAD_BYTES`` (4 GiB): the largest file whose size the catalog does not
  publish (a file with a published ``bytes`` may not exceed that).
* ``SPACY_CONTEXTUAL_MAX_UNPACKED_BYTES`` (16 GiB): the most an archive may unpack to.
* ``SPACY_CONTEXTUAL_LOCK_WAIT`` (3,600 s): the longest a process waits for another one that is
  downloading the same model.

An archive may also hold at most ``MAX_MEMBERS`` members, and none may unpack to more than
``MAX_RATIO`` times its compressed size (members under ``RATIO_FLOOR`` bytes excepted).
"""

from __future__ import annotations

import os

from ..errors import ContextualError

TIMEOUT_ENV = "SPACY_CONTEXTUAL_TIMEOUT"
DEADLINE_ENV = "SPACY_CONTEXTUAL_DOWNLOAD_DEADLINE"
MAX_BYTES_ENV = "SPACY_CONTEXTUAL_MAX_DOWNLOAD_BYTES"
MAX_UNPACKED_ENV = "SPACY_CONTEXTUAL_MAX_UNPACKED_BYTES"
LOCK_WAIT_ENV = "SPACY_CONTEXTUAL_LOCK_WAIT"
DEFAULTS = {
    TIMEOUT_ENV: 60,
    DEADLINE_ENV: 3600,
    MAX_BYTES_ENV: 4 * 2**30,
    MAX_UNPACKED_ENV: 16 * 2**30,
    LOCK_WAIT_ENV: 3600,
}
MAX_MEMBERS = 10_000
MAX_RATIO = 200
RATIO_FLOOR = 2**20


def limit(name: str) -> float:
    """The value of the limit ``name`` (one of ``DEFAULTS``): its environment variable, else the default."""
    text = os.environ.get(name, "").strip()
    try:
        value = float(text.replace("_", "")) if text else float(DEFAULTS[name])
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ContextualError(f"{name}={text!r} is not a number above 0; unset it for the default, {DEFAULTS[name]:,}")
    return value


def byte_limit(name: str) -> int:
    return int(limit(name))
