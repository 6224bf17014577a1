"""Recording a benchmark run in its history file, newest first.

A history file (``benchmarks/history/TOPIC.md``) is a title and an introduction, then one
``## DATE: what was measured`` section per run. A new run's section goes above the first one, so the
newest run is always on top.
"""

from __future__ import annotations

from pathlib import Path

HISTORY = Path(__file__).resolve().parent / "history"


def record_entry(path: Path, entry: str) -> None:
    """Insert ``entry`` (Markdown starting with a ``## `` heading) above the newest entry of ``path``."""
    entry = entry.strip("\n")
    if not entry.startswith("## "):
        raise ValueError(f"a history entry starts with a '## DATE: what' heading, not {entry[:40]!r}")
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    first = text.find("\n## ")
    if first < 0:
        text = f"{text.rstrip()}\n\n{entry}\n" if text.strip() else f"{entry}\n"
    else:
        text = f"{text[: first + 1]}{entry}\n\n{text[first + 1 :]}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
