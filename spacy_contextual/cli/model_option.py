"""The one way a command takes a model: ``NAME|DIR``, a model name from the catalog (``spacy-contextual
models``), a model folder (or a file the command reads), or ``default`` (the bundled model), turned into
its directory by the one resolver (``hub/resolver.py``) as the command line is read; and the one
``--catalog FILE`` option every model-taking command accepts, read before its model.

A command declares ``model_option`` / ``model_argument`` (marked by ``MODEL_METAVAR``, which the CLI test
walks to find every model parameter) and ``catalog: Catalog = None``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from .models import CATALOG_HELP, use_catalog
from .params import MODEL_METAVAR

MODEL_HELP = "A model name from `spacy-contextual models`, a model folder, or 'default' (the bundled {what})"


def resolve_model(kind: str, value: str | None) -> str | None:
    """An existing path as it is (a folder, or a file such as finetune-elmo's weights.hdf5); any other
    value through the one resolver: ``default`` is the bundled model, a name its cached (fetched) folder."""
    from ..hub.resolver import resolve_model_dir

    if value is None or Path(value).expanduser().exists():
        return value
    return str(resolve_model_dir(kind, value))


def model_resolver(kind: str | None) -> Callable[..., str | None]:
    """The option's callback; ``kind`` None: the command's ``--encoder`` says (an eager option)."""

    def resolve(ctx: typer.Context, value: str | None) -> str | None:
        return resolve_model(kind or ctx.params["encoder"], value)

    resolve.kind = kind
    return resolve


def _help(what: str, extra: str) -> str:
    return MODEL_HELP.format(what=what) + (f"; {extra}" if extra else "")


def model_option(kind: str | None, *decls: str, what: str, extra: str = "") -> Any:
    """``--model NAME|DIR`` (or other ``decls``) for a model of ``kind``, to use as ``Annotated[str | None,
    model_option(...)]``; ``what``: the bundled model, in the help."""
    return typer.Option(
        *(decls or ("--model",)), metavar=MODEL_METAVAR, callback=model_resolver(kind), help=_help(what, extra)
    )


def model_argument(kind: str, *, what: str, extra: str = "") -> Any:
    """``NAME|DIR`` as a positional argument, to use as ``Annotated[str, model_argument(...)]``."""
    return typer.Argument(metavar=MODEL_METAVAR, callback=model_resolver(kind), help=_help(what, extra))


Catalog = Annotated[
    Path | None,
    typer.Option("--catalog", help=CATALOG_HELP, callback=use_catalog, is_eager=True, expose_value=False),
]
