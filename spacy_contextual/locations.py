"""Where the package's own files are: ``ASSETS``, the bundled models and examples, which the writer
protects and the resolver reads."""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parent / "assets"
