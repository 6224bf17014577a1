"""The GPU check's report: run.sh's step log (``steps.tsv``: step, exit status, seconds), its machine
notes (``machine.txt``) and each step's JSON rows (``<step>.json``) in one folder become
``gpu_check.json`` and the markdown tables ``gpu_check.md`` there; ``--record FILE`` also puts the table at the top of a
history file (``benchmarks/history/elmo_inference.md``).

    python -m benchmarks.gpu.report OUT [--record benchmarks/history/elmo_inference.md]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..record import record_entry

REPORT = "gpu_check"


def verdict(ok: bool | None) -> str:
    return "" if ok is None else ("PASS" if ok else "**FAIL**")


def main(out: Path, record: Path | None = None) -> int:
    steps = [line.split("\t") for line in (out / "steps.tsv").read_text().splitlines() if line]
    steps = [{"step": name, "exit_status": int(status), "seconds": float(seconds)} for name, status, seconds in steps]
    checks = [
        json.loads((out / f"{s['step']}.json").read_text()) for s in steps if (out / f"{s['step']}.json").is_file()
    ]
    machine = (out / "machine.txt").read_text().strip() if (out / "machine.txt").is_file() else ""
    passed = all(s["exit_status"] == 0 for s in steps) and not any(
        row["ok"] is False for check in checks for row in check["rows"]
    )
    report = {"date": time.strftime("%Y-%m-%d"), "machine": machine, "passed": passed, "steps": steps, "checks": checks}
    (out / f"{REPORT}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")

    lines = [f"## {report['date']}: GPU check ({'passed' if passed else 'FAILED'})", "", machine, ""]
    lines += ["| step | exit status | seconds |", "|---|---|---|"]
    lines += [f"| {s['step']} | {s['exit_status']} | {s['seconds']:.0f} |" for s in steps]
    for check in checks:
        info = ", ".join(f"{k} {v}" for k, v in check.items() if k not in ("check", "rows"))
        lines += ["", f"**{check['check']}** ({info})", "", "| measured | value | result |", "|---|---|---|"]
        lines += [f"| {row['what']} | {row['value']} | {verdict(row['ok'])} |" for row in check["rows"]]
    lines += ["", "Command: `bash benchmarks/gpu/run.sh`", ""]
    (out / f"{REPORT}.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    if record is not None:
        record_entry(record, "\n".join(lines))
    return 0 if passed else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="the folder run.sh wrote")
    parser.add_argument("--record", type=Path, default=None, help="a history file to put the table in")
    args = parser.parse_args()
    sys.exit(main(args.out, args.record))
