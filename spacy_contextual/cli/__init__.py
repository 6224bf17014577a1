"""``spacy-contextual`` command line (typer). Importing a command module registers its commands; the
modules import only typer at the top, so ``--help`` starts fast (torch, spaCy and h5py load when a
command that needs them runs)."""

from . import (  # each registers its commands
    bilm_commands,  # noqa: F401
    catalog_commands,  # noqa: F401
    convert,  # noqa: F401
    cove_commands,  # noqa: F401
    dashboard,  # noqa: F401
    embed,  # noqa: F401
    info,  # noqa: F401
    model_dir_commands,  # noqa: F401
    probe,  # noqa: F401
)
from ._app import app

__all__ = ["app"]
