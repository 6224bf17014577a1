"""The ``spacy-contextual`` console script: the typer app, then an exit without the interpreter's teardown.

A Python process that has imported torch spends about 0.3 s at exit tearing down its modules (more
than loading the bundled ELMo). Once a command has returned, everything it wrote is closed and
renamed into place (the one writer, ``writer.py``), so the script runs the exit handlers (``atexit``:
logging, progress bars), flushes stdout and stderr and ends the process with ``os._exit`` and the
command's exit code. While another non-daemon thread still runs, it exits the normal way, which
waits for it. An uncaught exception (a bug) is not touched: Python prints its traceback as usual.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

from ._app import app


def main() -> None:
    try:
        app(prog_name="spacy-contextual")
        code = 0
    except SystemExit as exit:
        code = exit.code
    if not isinstance(code, int):  # sys.exit("message") or sys.exit(None), as the interpreter reads them
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    if any(thread.is_alive() and not thread.daemon for thread in threading.enumerate()[1:]):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    os._exit(code)
