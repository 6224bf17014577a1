"""The comparison table of the downstream tasks (the last step of ``project.yml``), in Markdown.

For each task directory it reads the test scores that ``spacy evaluate --output`` wrote,
``METRICS/TASK/PIPELINE.json``, and the dev scores of the same checkpoint, the ``performance`` record
that ``spacy train`` stores in ``TRAINING/TASK/PIPELINE/model-best/meta.json``. The pipeline whose name
starts with ``baseline`` is the reference; every other row gets the relative error reduction on test,

    reduction = (error_baseline - error) / error_baseline,   error = 1 - score,

so 0.137 means the pipeline makes 13.7 % fewer errors than the baseline.

    python scripts/compare_table.py metrics/ewt metrics/sentiment --training training --output metrics/comparison.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# spacy evaluate key -> column label, scale and digits of the printed score
METRICS = {
    "tag_acc": ("XPOS", 100, 2),
    "pos_acc": ("UPOS", 100, 2),
    "morph_acc": ("MORPH", 100, 2),
    "cats_macro_f": ("macro F", 100, 2),
    "cats_macro_auc": ("ROC AUC", 1, 3),
}
BASELINE_PREFIX = "baseline"


def read_task(metrics_dir: Path, training_dir: Path) -> dict[str, dict[str, dict[str, float]]]:
    """{pipeline: {"dev": scores, "test": scores}} for one task, pipelines in name order."""
    test_files = sorted(metrics_dir.glob("*.json"))
    if not test_files:
        fix = f"write one with `spacy evaluate MODEL TEST --output {metrics_dir}/NAME.json`"
        raise FileNotFoundError(f"{metrics_dir} holds no metrics JSON; {fix}")
    scores = {}
    for test_file in test_files:
        meta = training_dir / metrics_dir.name / test_file.stem / "model-best" / "meta.json"
        if not meta.is_file():
            raise FileNotFoundError(f"{meta} not found: the dev scores of {test_file.stem} come from its model-best")
        dev = json.loads(meta.read_text(encoding="utf-8")).get("performance", {})
        scores[test_file.stem] = {"dev": dev, "test": json.loads(test_file.read_text(encoding="utf-8"))}
    return scores


def error_reduction(score: float, baseline: float) -> float | None:
    baseline_error = 1.0 - baseline
    return None if baseline_error == 0 else (baseline_error - (1.0 - score)) / baseline_error


def task_table(task: str, scores: dict[str, dict[str, dict[str, float]]]) -> str:
    """One Markdown table: a row per pipeline, dev / test / test error reduction per metric."""
    baselines = [name for name in scores if name.startswith(BASELINE_PREFIX)]
    if len(baselines) != 1:
        raise ValueError(f"task {task}: expected one pipeline named {BASELINE_PREFIX}*, found {baselines or 'none'}")
    baseline = scores[baselines[0]]["test"]
    keys = [key for key in METRICS if all(key in split["test"] for split in scores.values())]
    if not keys:
        raise ValueError(f"task {task}: the test metrics share none of the scores {list(METRICS)}")
    header = ["pipeline"]
    for key in keys:
        label = METRICS[key][0]
        header += [f"dev {label}", f"test {label}", f"{label} error reduction"]
    lines = [f"### {task}", "", "| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for name, split in sorted(scores.items(), key=lambda item: item[0] != baselines[0]):
        row = [name]
        for key in keys:
            _, scale, digits = METRICS[key]
            dev = split["dev"].get(key)
            row.append("–" if dev is None else f"{dev * scale:.{digits}f}")
            row.append(f"{split['test'][key] * scale:.{digits}f}")
            reduction = None if name == baselines[0] else error_reduction(split["test"][key], baseline[key])
            row.append("–" if reduction is None else f"{100 * reduction:.1f} %")
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", f"Error reduction: on test, relative to {baselines[0]} (error = 1 - score)."]
    return "\n".join(lines) + "\n"


def comparison(task_dirs: list[Path], training_dir: Path) -> str:
    return "\n".join(task_table(path.name, read_task(path, training_dir)) for path in task_dirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", type=Path, nargs="+", help="metrics directories, one per task (e.g. metrics/ewt)")
    parser.add_argument("--training", type=Path, default=Path("training"), help="holds TASK/PIPELINE/model-best")
    parser.add_argument("--output", type=Path, help="also write the Markdown here")
    args = parser.parse_args()
    markdown = comparison(args.tasks, args.training)
    print(markdown)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(markdown, encoding="utf-8")


if __name__ == "__main__":
    main()
