"""``spacy-contextual`` command line (typer). Importing a command module registers its commands."""

from ._app import app
from . import elmo  # noqa: F401,E402
from . import convert  # noqa: F401,E402
from . import cove  # noqa: F401,E402
from . import train  # noqa: F401,E402
from . import dashboard  # noqa: F401,E402

__all__ = ["app"]
