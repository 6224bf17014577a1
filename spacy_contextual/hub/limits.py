"""The limits of a download, each a number of seconds or bytes that an environment variable can change.

* ``SPACY_CONTEXTUAL_TIMEOUT`` (60 s): the longest wait for the server's next bytes (connect, each read).
* ``SPACY_CONTEXTUAL_DOWNLOAD_DEADLINE`` (3,600 s): the longest a whole file may take.
* ``SPACY_CONTEXTUAL_MAX_DOWNLOAD_BYTES`` (4 GiB): the largest file whose size the catalog does not
  publish (a file with a published ``bytes`` may not exceed that).
* ``SPACY_CONTEXTUAL_MAX_UNPACKED_BYTES`` (16 GiB): the most an archive may unpack to.
* ``SPACY_CONTEXTUAL_LOCK_WAIT`` (3,600 s): the longest a process waits for another one that is
  downloading the same model.

Each is read through ``environment.py``, whose ranges stop at what the code can use (a socket waits at
most ``LONGEST_POLL_S``, a timer thread ``LONGEST_TIMER_S``); a value out of range is one line naming the
variable. An archive may also hold at most ``MAX_MEMBERS`` members, and none may unpack to more than
``MAX_RATIO`` times its compressed size (members under ``RATIO_FLOOR`` bytes excepted).
"""

from __future__ import annotations

from .. import environment

TIMEOUT_ENV = environment.TIMEOUT.name
DEADLINE_ENV = environment.DOWNLOAD_DEADLINE.name
MAX_BYTES_ENV = environment.MAX_DOWNLOAD_BYTES.name
MAX_UNPACKED_ENV = environment.MAX_UNPACKED_BYTES.name
LOCK_WAIT_ENV = environment.LOCK_WAIT.name
MAX_MEMBERS = 10_000
MAX_RATIO = 200
RATIO_FLOOR = 2**20


def limit(name: str) -> float:
    """The value of the limit ``name`` (one of the ``*_ENV`` names): its variable, in its range, else the default."""
    return environment.VARIABLES[name].get()


def byte_limit(name: str) -> int:
    return int(limit(name))
