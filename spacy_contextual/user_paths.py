"""Paths as the user types them: ``~`` and ``~user`` expanded to a home folder, as a shell does, wherever
the package takes a path (a command's INPUT and OUTPUT, a model option, a catalog, a setting).

Where there is no such home (``~nosuchuser/m``, or ``~draft.txt``, which names a user ``draft.txt``), a
shell leaves the text as it is; here it is one line saying so and how to write the name of a file that
starts with ``~`` (``./~draft.txt``), never a ``RuntimeError`` and never a file made under a name the
user did not mean.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ContextualError, quoted

MAX_PATH_BYTES = 4096  # PATH_MAX on Linux: no longer path can be opened


class HomeError(ContextualError):
    """A path starting with ``~`` for which there is no home folder."""


def expand_user(path: str | os.PathLike, what: str = "") -> Path:
    """``path`` with a leading ``~`` or ``~user`` replaced by that home folder; ``what`` (e.g. the
    option or variable that gave it) starts the message when there is none."""
    text = os.fspath(path)
    if not text.startswith("~"):
        return Path(text)
    expanded = os.path.expanduser(text)
    empty_home = text.split("/", 1)[0] == "~" and os.environ.get("HOME") == ""  # os.path would make "~/x" "/x"
    if expanded.startswith("~") or empty_home:  # os.path leaves it as it is when there is no such home
        head = text.split("/", 1)[0]
        if head != "~":
            why = f"there is no user {quoted(head[1:], 40)}"
        else:
            why = "HOME is empty" if empty_home else "HOME is not set, and the user database has no home for this user"
        raise HomeError(
            f"{what + ': ' if what else ''}{quoted(text)}: {quoted(head, 40)} names no home folder ({why}); for a "
            f"file or folder whose name starts with ~ write ./{text}, else give the full path"
        )
    return Path(expanded)
