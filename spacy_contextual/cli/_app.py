"""The one typer app behind the ``spacy-contextual`` command; each command module registers on it.

Expected failures (``ContextualError``: a bad or damaged file, a wrong key, bad input; ``OSError``:
a file that is missing, unreadable or not writable; a bad parameter value) are printed as one line
``error: <message>`` on stderr with exit code 1, from whichever command or module raised them.
``--debug`` (or ``SPACY_CONTEXTUAL_DEBUG=1``) shows their traceback instead. Anything else is a bug
and keeps its traceback. Warnings are printed as one line ``warning: <message>`` the same way.
"""

import warnings
from pathlib import Path

import typer
from typer.core import TyperGroup

from ..errors import ContextualError

DEBUG_ENV = "SPACY_CONTEXTUAL_DEBUG"
EXPECTED_ERRORS = (ContextualError, OSError, typer.BadParameter)
PRECISION_HELP = "fp32 (exact), bf16 (fast only on CPUs with AVX-512 BF16 or AMX), or fp16 (CUDA only)"


def one_line(error: BaseException) -> str:
    message = error.format_message() if isinstance(error, typer.BadParameter) else str(error)
    if isinstance(error, OSError) and error.filename is not None and str(error.filename) not in message:
        message = f"{error.filename}: {message}"
    return " ".join(message.split()) or type(error).__name__


class CommandGroup(TyperGroup):
    """Runs a command and turns its expected errors into one line on stderr and exit code 1."""

    def invoke(self, ctx: typer.Context):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # the reader of our output went away: typer's own handling
            raise
        except EXPECTED_ERRORS as error:
            if ctx.params.get("debug"):
                raise
            typer.echo(f"error: {one_line(error)}", err=True)
            raise typer.Exit(1) from None


app = typer.Typer(
    name="spacy-contextual",
    cls=CommandGroup,
    help="ELMo and CoVe contextual word vectors for spaCy: embed, train, translate, probe.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def main(
    debug: bool = typer.Option(
        False, "--debug", envvar=DEBUG_ENV, help="Show the traceback of an error instead of its one-line message"
    ),
    catalog: Path | None = typer.Option(
        None, "--catalog", help="A model catalog JSON file adding to the shipped one, for every --model NAME"
    ),
) -> None:
    """ELMo and CoVe contextual word vectors for spaCy."""
    if catalog is not None:
        from .models import use_catalog

        use_catalog(catalog)
    if not debug:
        warnings.showwarning = show_warning


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line on stderr, like the errors."""
    typer.echo(f"warning: {one_line(message) if isinstance(message, Exception) else message}", err=True)
