"""The package's expected failures: bad input the user can fix (a wrong or damaged file, a missing
key, an empty text). Each message names the problem and the fix; the command line prints it as one
line without a traceback. Anything else is a bug and keeps its traceback."""


class ContextualError(ValueError):
    """Base class of every error whose message is meant for the user as it is."""


class ModelDirError(ContextualError):
    """A model directory that is incomplete, damaged, or not one spacy-contextual wrote."""


def quoted(text: object, limit: int = 80) -> str:
    """What the user typed, as a message quotes it: at most ``limit`` characters, cut with an ellipsis."""
    text = str(text)
    return repr(text) if len(text) <= limit else repr(text[: limit - 1] + "…")
