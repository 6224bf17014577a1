"""The package's expected failures: bad input the user can fix (a wrong or damaged file, a missing
key, an empty text). Each message names the problem and the fix; the command line prints it as one
line without a traceback. Anything else is a bug and keeps its traceback."""


class ContextualError(ValueError):
    """Base class of every error whose message is meant for the user as it is."""
