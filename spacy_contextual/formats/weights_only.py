"""Reading a ``torch.save``'d file (zip or legacy format) with ``torch.load(weights_only=True)``:
tensors and plain containers only, never code.

Every refusal is one line naming the file and saying what it is. A ``pickle.UnpicklingError`` (how
torch's weights-only unpickler refuses a class, a function, a blocked module or an opcode it does
not allow) means the file holds code or objects that are not plain weights: refused, and nothing
was run; the line gives the unpickler's own reason, never torch's advice to load it without the
check. Anything else (a truncated zip, an unexpected end of file, bytes that are no pickle opcode) is a
damaged file.
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import torch

from ..errors import ContextualError

REASON_CHARACTERS = 120
DAMAGED_PICKLE = ("Unsupported operand",)  # bytes that are no pickle opcode: a cut or damaged file, not code


def load_weights_only(path: Path, error: type[ContextualError], mmap: bool = False) -> object:
    """What ``path`` holds, unpickled with ``weights_only=True``; a refusal raises ``error``."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as refused:
        if _reason(refused).startswith(DAMAGED_PICKLE):
            raise error(
                f"{path} is not a readable PyTorch state dict ({_reason(refused)}); the file is damaged or truncated"
            ) from None
        raise error(
            f"{path} contains code or objects that are not plain weights ({_reason(refused)}); refused, nothing "
            "was run: load only weight files from a source you trust"
        ) from None
    except (RuntimeError, EOFError, ValueError, OSError, zipfile.BadZipFile) as damaged:
        cause = " ".join((str(damaged).strip().splitlines() or [type(damaged).__name__])[0].split())
        raise error(
            f"{path} is not a readable PyTorch state dict ({_cut(cause)}); the file is damaged or truncated"
        ) from None


def _reason(refused: pickle.UnpicklingError) -> str:
    """The weights-only unpickler's own reason (the error torch wraps): its first sentence, short."""
    inner = refused.__context__ if isinstance(refused.__context__, pickle.UnpicklingError) else None
    text = " ".join(str(inner).split()).split(". ")[0].rstrip(".") if inner is not None else ""  # not its advice
    return _cut(text) if text else "the weights-only unpickler refused it"


def _cut(text: str) -> str:
    """``text`` cut at a word boundary to at most ``REASON_CHARACTERS``, marked with an ellipsis."""
    if len(text) <= REASON_CHARACTERS:
        return text
    return text[:REASON_CHARACTERS].rsplit(" ", 1)[0].rstrip(".,;:") + "…"
