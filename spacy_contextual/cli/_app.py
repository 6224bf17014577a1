"""The one typer app behind the ``spacy-contextual`` command; each command module registers on it.

Expected failures (``ContextualError``: a bad or damaged file, a wrong key, bad input; ``OSError``:
a file that is missing, unreadable or not writable; a bad parameter value) are printed as one line
``error: <message>`` on stderr with exit code 1, from whichever command or module raised them.
``--debug`` (or ``SPACY_CONTEXTUAL_DEBUG=1``) shows their traceback instead. Anything else is a bug
and keeps its traceback. Warnings are printed as one line ``warning: <message>`` the same way.

SIGINT and SIGTERM stop any command with one line, ``interrupted`` (or ``interrupted; <how to resume>``
for a command that can continue where it stopped) and exit code 128 + the signal number (130, 143);
the interrupted code's cleanup (temporary files) runs on the way out. A second signal while the first
one unwinds ends the process at once. Python drops an exception raised inside a finalizer (a ``__del__``
or weakref callback the signal happened to land in); the interrupt is then delivered again a moment
later, so no signal is lost and nothing is printed for it. A command that can be resumed says how with
``say_on_interrupt(ctx, hint)``, where ``hint`` may be a function asked at the moment of the signal
(e.g. whether a checkpoint exists yet). Under torchrun only rank 0 prints the line.
"""

import contextlib
import functools
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from .. import environment
from ..errors import ContextualError
from ..writer import storage_failure
from .params import GuardedCommand

DEBUG_ENV = environment.DEBUG.name
EXPECTED_ERRORS = (ContextualError, OSError, typer.BadParameter)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
RESUME_HINT = "spacy_contextual.resume_hint"


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; raised where the command was, so its cleanup runs on the way out."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


REDELIVERY_DELAY_S = 0.05


def _raise_interrupted(signum, frame) -> None:
    for stop_signal in STOP_SIGNALS:  # a second signal while this one unwinds ends the process
        signal.signal(stop_signal, signal.SIG_DFL)
    raise Interrupted(signum)


def _redeliver_dropped_interrupt(default_hook: Callable, unraisable) -> None:
    """An ``Interrupted`` raised inside a finalizer is dropped by Python: send the signal again, after
    the finalizer has returned, with the handler back in place."""
    if not isinstance(unraisable.exc_value, Interrupted):
        return default_hook(unraisable)
    signum = unraisable.exc_value.signum
    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, _raise_interrupted)
    threading.Timer(REDELIVERY_DELAY_S, os.kill, (os.getpid(), signum)).start()


@contextlib.contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM raise ``Interrupted`` while the block runs (main thread only; others keep theirs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {stop_signal: signal.signal(stop_signal, _raise_interrupted) for stop_signal in STOP_SIGNALS}
    previous_hook = sys.unraisablehook
    sys.unraisablehook = functools.partial(_redeliver_dropped_interrupt, previous_hook)
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for stop_signal, handler in previous.items():
            signal.signal(stop_signal, handler)


def end_progress_bars() -> None:
    """Close the open tqdm bars, so that they end their line before the one line is printed."""
    progress = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(progress, "tqdm", None), "_instances", ())):
        bar.close()


def say_on_interrupt(ctx: typer.Context, hint: str | Callable[[], str | None]) -> None:
    """What the one line after ``interrupted;`` tells the user, e.g. "run the same command to resume"
    (a function is asked when the signal arrives; it returns None where there is nothing to resume)."""
    ctx.meta[RESUME_HINT] = hint


def interrupted_message(ctx: typer.Context) -> str:
    hint = ctx.meta.get(RESUME_HINT)
    hint = hint() if callable(hint) else hint
    return f"interrupted; {hint}" if hint else "interrupted"


def one_line(error: BaseException) -> str:
    message = error.format_message() if isinstance(error, typer.BadParameter) else str(error)
    if isinstance(error, OSError) and error.filename is not None and str(error.filename) not in message:
        message = f"{error.filename}: {message}"
    return " ".join(message.split()) or type(error).__name__


def storage_line(error: BaseException, reason: str) -> str:
    """One line for a write the storage refused (a library's own message can run to many lines)."""
    where = f" {error.filename}" if isinstance(error, OSError) and error.filename else ""
    return f"could not write{where}: {reason}; nothing was left half-written: free some space or raise the limit"


class CommandGroup(TyperGroup):
    """Runs a command and turns its expected errors into one line on stderr and exit code 1, and SIGINT /
    SIGTERM into one line and exit code 130 / 143."""

    def invoke(self, ctx: typer.Context):
        if hasattr(signal, "SIGXFSZ"):  # a file-size limit (ulimit -f) fails the write (EFBIG), not the process
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        try:
            with stop_signals_interrupt():
                return super().invoke(ctx)
        except BrokenPipeError:  # the reader of our output went away: typer's own handling
            raise
        except (*EXPECTED_ERRORS, RuntimeError) as error:  # h5py reports a refused write as a RuntimeError
            reason = storage_failure(error)
            if ctx.params.get("debug") or not (reason or isinstance(error, EXPECTED_ERRORS)):
                raise
            message = (
                one_line(error) if reason is None or isinstance(error, ContextualError) else storage_line(error, reason)
            )
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt as interrupt:  # not a bug: one line, with or without --debug
            end_progress_bars()
            if os.environ.get("RANK", "0") == "0":
                typer.echo(interrupted_message(ctx), err=True)
            raise typer.Exit(128 + getattr(interrupt, "signum", signal.SIGINT)) from None


class App(typer.Typer):
    """The typer app whose commands are all ``GuardedCommand`` (their outputs checked by the one writer)."""

    def command(self, name: str | None = None, *, cls=None, **kwargs):
        return super().command(name, cls=cls or GuardedCommand, **kwargs)


app = App(
    name="spacy-contextual",
    cls=CommandGroup,
    help="ELMo and CoVe contextual word vectors for spaCy: embed, train, translate, probe.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def main(
    ctx: typer.Context,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", help=f"Show the traceback of an error instead of its one-line message (or {DEBUG_ENV}=1)"
        ),
    ] = False,
    catalog: Annotated[
        Path | None,
        typer.Option("--catalog", help="A model catalog JSON file adding to the shipped one, for every --model NAME"),
    ] = None,
) -> None:
    """ELMo and CoVe contextual word vectors for spaCy."""
    debug = ctx.params["debug"] = debug or environment.DEBUG.get()
    if catalog is not None:
        from ..hub.catalog import use_catalog

        use_catalog(catalog)
    if not debug:
        warnings.showwarning = show_warning


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line on stderr, like the errors."""
    typer.echo(f"warning: {one_line(message) if isinstance(message, Exception) else message}", err=True)
