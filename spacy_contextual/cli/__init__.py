"""``spacy-contextual`` command line (typer). Importing a command module registers its commands; the
modules import only typer at the top, so ``--help`` starts fast (torch, spaCy and h5py load when a
command that needs them runs)."""

from . import (
    convert,  # noqa: F401,E402
    dashboard,  # noqa: F401,E402
    embed,  # noqa: F401,E402
    info,  # noqa: F401,E402
    lm,  # noqa: F401,E402
    model_dir,  # noqa: F401,E402
    models,  # noqa: F401,E402
    mt,  # noqa: F401,E402
    probe,  # noqa: F401,E402
)
from ._app import app

__all__ = ["app"]
