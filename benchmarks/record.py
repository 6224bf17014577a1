"""Recording benchmark runs: in their history file, newest first (``record_entry``), and as JSON
written as they go (``Results``, the GPU check's steps).

A history file (``benchmarks/history/TOPIC.md``) is a title and an introduction, then one
``## DATE: what was measured`` section per run. A new run's section goes above the first one, so the
newest run is always on top.
"""

from __future__ import annotations

import json
from pathlib import Path

HISTORY = Path(__file__).resolve().parent / "history"


def record_entry(path: Path, entry: str) -> None:
    """Insert ``entry`` (Markdown starting with a ``## `` heading) above the newest entry of ``path``, with
    the machine line under its heading."""
    if not entry.strip("\n").startswith("## "):
        raise ValueError(f"a history entry starts with a '## DATE: what' heading, not {entry.strip()[:40]!r}")
    entry = with_machine(entry)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    first = text.find("\n## ")
    if first < 0:
        text = f"{text.rstrip()}\n\n{entry}\n" if text.strip() else f"{entry}\n"
    else:
        text = f"{text[: first + 1]}{entry}\n\n{text[first + 1 :]}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def with_machine(entry: str) -> str:
    """``entry`` with a line naming the CPU it ran on (its flags decide bf16 speed) under its heading."""
    from spacy_contextual.hardware import describe_cpu

    heading, _, rest = entry.strip("\n").partition("\n")
    return f"{heading}\n\nMachine: {describe_cpu()}.\n{rest}".rstrip("\n")


def publish(entry: str, path: Path | None) -> None:
    """Print ``entry`` with its machine line, and record it in the history file ``path`` when one is given."""
    print(with_machine(entry))
    if path:
        record_entry(path, entry)


class Results:
    """The rows of one check, rewritten to ``path`` (JSON) after every row, so that a run that dies
    keeps what it measured: ``{"check": name, **info, "rows": [{"what", "value", "ok"}, ...]}``.
    ``ok`` is True/False for a pass/fail criterion, None for a plain measurement."""

    def __init__(self, path: Path | None, check: str, **info):
        self.path, self.check, self.info, self.rows = path, check, info, []
        self._write()

    def add(self, what: str, value: str, ok: bool | None = None) -> None:
        self.rows.append({"what": what, "value": value, "ok": ok})
        verdict = "" if ok is None else ("  PASS" if ok else "  FAIL")
        print(f"[{self.check}] {what}: {value}{verdict}", flush=True)
        self._write()

    @property
    def failed(self) -> bool:
        return any(row["ok"] is False for row in self.rows)

    def _write(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"check": self.check, **self.info, "rows": self.rows}, indent=1) + "\n")
