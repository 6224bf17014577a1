"""Write the layer mixes a trained pipeline learned as the JSON the dashboard's Layer weights page shows
out of the box (``spacy_contextual/assets/layer_weights/``), with how the pipeline was made.

    python -m benchmarks.export_layer_weights PIPELINE_DIR OUT.json --log TRAIN.log \
        --command "python -m spacy train ..." --data "UD English EWT ..." [--wall-clock "2 h 10 min"]

``--log`` is the console output of ``spacy train``: the script reads the last step and whether the
run stopped on its patience (converged) from it; the scores are the pipeline's meta.json performance.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import spacy

from spacy_contextual.analysis.layer_weights import write_mixes_json


def training_progress(log: Path, patience: int, score_weights: dict[str, float]) -> dict:
    """{"last_step", "best_step", "best_score", "converged"} from a ``spacy train`` console log. The
    log's SCORE column is rounded to two decimals, so each evaluation's score is recomputed from its
    columns (TAG_ACC, POS_ACC, ...) with the config's ``score_weights``; converged = the run finished
    ("Saved pipeline") ``patience`` steps after its best evaluation."""
    text = log.read_text(encoding="utf-8", errors="replace")
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in text.splitlines()]
    header = next(line.split() for line in lines if line.startswith("E ") and "SCORE" in line)
    columns = {name.lower(): index - len(header) for index, name in enumerate(header)}  # counted from the right
    rows = []
    for line in lines:
        cells = line.split()
        if len(cells) > 3 and cells[0].isdigit() and cells[1].isdigit():
            score = sum(w * float(cells[columns[k]]) / 100 for k, w in score_weights.items() if w and k in columns)
            rows.append((int(cells[1]), score))
    if not rows:
        return {"last_step": None, "best_step": None, "best_score": None, "converged": False}
    best_step, best_score = max(rows, key=lambda row: (row[1], -row[0]))
    last_step = rows[-1][0]
    return {
        "last_step": last_step,
        "best_step": best_step,
        "best_score": round(best_score, 4),
        "converged": "Saved pipeline to output directory" in text and last_step - best_step >= patience,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", type=Path, help="e.g. runs/elmo_tagger/model-best")
    parser.add_argument("out", type=Path)
    parser.add_argument("--log", type=Path, required=True, help="the console output of spacy train")
    parser.add_argument("--command", required=True, help="the spacy train command that made the pipeline")
    parser.add_argument("--data", required=True, help="the training and dev data")
    parser.add_argument("--wall-clock", default="", help="how long the training took")
    args = parser.parse_args()
    training = spacy.util.load_config(args.pipeline / "config.cfg", interpolate=False)["training"]
    progress = training_progress(args.log, training["patience"], dict(training["score_weights"]))
    best = args.pipeline.name
    state = (
        "converged (stopped on its patience)"
        if progress["converged"]
        else f"NOT converged: taken at step {progress['last_step']}, before its patience ran out"
    )
    about = {
        "summary": f"the mixes of the tagger and morphologizer of one UD English EWT run on the bundled ELMo "
        f"({best}: step {progress['best_step']}, dev score {progress['best_score']}), {state}",
        "command": args.command,
        "data": args.data,
        "pipeline_dir": best,
        **progress,
        "wall_clock": args.wall_clock,
    }
    document = write_mixes_json(args.pipeline, args.out, about)
    print(f"wrote {args.out}: {len(document['mixes'])} rows; scores {document['scores']}")


if __name__ == "__main__":
    main()
