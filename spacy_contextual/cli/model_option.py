"""The one way a command takes a model: ``NAME|DIR``, a model name from the catalog or the cache
(``spacy-contextual models``), a model folder (or, where the command says so, a file it reads), or
``default`` (the bundled model), read by the one resolver's rule (``hub/resolver.py``) as the command
line is parsed; and the one ``--catalog FILE`` option every model-taking command accepts, read before
its model.

Parsing only reads the name (an unknown one is refused at once, with the nearest names): the value is
a ``ModelName``. ``GuardedCommand`` (``params.py``) resolves it, fetching a catalog model if need be,
once the command's outputs and options are checked, and the command receives the model's path as a
string.

A command declares ``model_option`` / ``model_argument`` (marked by ``MODEL_METAVAR``, which the CLI test
walks to find every model parameter) and ``catalog: Catalog = None``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ..hub.resolver import ModelName, read_model_name
from .catalog_commands import CATALOG_HELP, use_catalog
from .params import MODEL_METAVAR

MODEL_HELP = "A model name from `spacy-contextual models`, a model folder, or 'default' (the bundled {what})"


def model_reader(kind: str | None, files: bool = False) -> Callable[..., ModelName | None]:
    """The parameter's callback: the name read, not resolved; ``kind`` None: the command's ``--encoder``
    says (an eager option); ``files``: an existing file is taken too."""

    def read(ctx: typer.Context, value: str | None) -> ModelName | None:
        return None if value is None else read_model_name(kind or ctx.params["encoder"], value, files=files)

    read.kind = kind
    return read


def _help(what: str, extra: str) -> str:
    return MODEL_HELP.format(what=what) + (f"; {extra}" if extra else "")


def model_option(kind: str | None, *decls: str, what: str, extra: str = "") -> Any:
    """``--model NAME|DIR`` (or other ``decls``) for a model of ``kind``, to use as ``Annotated[str | None,
    model_option(...)]``; ``what``: the bundled model, in the help."""
    return typer.Option(
        *(decls or ("--model",)), metavar=MODEL_METAVAR, callback=model_reader(kind), help=_help(what, extra)
    )


def model_argument(kind: str, *, what: str, extra: str = "", files: bool = False) -> Any:
    """``NAME|DIR`` as a positional argument, to use as ``Annotated[str, model_argument(...)]``; ``files``:
    the command reads a file too (e.g. a bilm-tf weights.hdf5)."""
    return typer.Argument(metavar=MODEL_METAVAR, callback=model_reader(kind, files), help=_help(what, extra))


Catalog = Annotated[
    Path | None,
    typer.Option("--catalog", help=CATALOG_HELP, callback=use_catalog, is_eager=True, expose_value=False),
]
