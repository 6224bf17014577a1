"""Type aliases shared by the whole package (no spaCy or torch import)."""

from pathlib import Path

PathLike = str | Path
