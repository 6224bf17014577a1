"""``project.yml`` (the downstream comparison as one command) and its table step
``scripts/compare_table.py``.

The project runs end to end as a user runs it, ``python -m spacy project run WORKFLOW``, in smoke
form: its vars point at a few sentences and reviews written here, tiny random ELMo and CoVe models,
and two training steps per pipeline. The table logic is tested on metrics files written here, and
the speed scripts' way of recording a run in its history file (``benchmarks/record.py``) on a file
written here."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

import pytest
from spacy.cli import app as spacy_cli
from typer.testing import CliRunner
from util import DATA, tiny_bilm, tiny_cove_dir

from benchmarks.record import record_entry
from scripts.compare_table import comparison, error_reduction
from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.hardware import describe_cpu

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.integration  # processes, servers, spacy train or a browser

REVIEWS = [("a fine , moving film .\nloved it .", "pos"), ("dull and far too long .", "neg")]


def project_dir(path: Path) -> Path:
    """The repository's project.yml with the configs and scripts it names, in a directory of its own
    (so the test's project.lock and outputs stay out of the checkout)."""
    path.mkdir()
    (path / "project.yml").write_text((ROOT / "project.yml").read_text(encoding="utf-8"), encoding="utf-8")
    for name in ("configs", "scripts"):
        (path / name).symlink_to(ROOT / name)
    return path


def smoke_vars(root: Path) -> list[str]:
    """Vars for a smoke run: 8 EWT sentences per split, 2 reviews per split, tiny models, 2 steps."""
    ewt = root / "ewt"
    ewt.mkdir()
    with gzip.open(DATA / "ud_english_ewt" / "dev.conllu.gz", "rt", encoding="utf-8") as f:
        sentences = f.read().split("\n\n")[:24]
    for i, split in enumerate(("train", "dev", "test")):
        with gzip.open(ewt / f"{split}.conllu.gz", "wt", encoding="utf-8") as out:
            out.write("\n\n".join(sentences[8 * i : 8 * i + 8]) + "\n\n")
    reviews = root / "reviews.jsonl.gz"
    with gzip.open(reviews, "wt", encoding="utf-8") as out:
        for split in ("train", "dev", "test"):
            for i, (text, label) in enumerate(REVIEWS):
                out.write(json.dumps({"id": f"{split}{i}", "text": text, "label": label, "split": split}) + "\n")
    elmo = save_bilm(tiny_bilm(), root / "tiny_elmo")
    cove = tiny_cove_dir(root / "tiny_cove")
    settings = {"ewt_data": ewt, "sentiment_data": reviews, "elmo_model": elmo, "cove_model": cove, "max_steps": 2}
    return [arg for key, value in settings.items() for arg in (f"--vars.{key}", str(value))]


def spacy_project_run(workflow: str, project: Path, overrides: list[str], capfd) -> str:
    """``python -m spacy project run WORKFLOW PROJECT --vars...``: spaCy's CLI app, invoked here (one
    interpreter start fewer); weasel runs each script line as a subprocess, as it does for a user."""
    result = CliRunner().invoke(spacy_cli, ["project", "run", workflow, str(project), *overrides])
    output = result.output + "".join(capfd.readouterr())
    assert result.exit_code == 0, output[-6000:]
    return output


@pytest.fixture
def activated_env(monkeypatch):
    """As in an activated environment: `spacy-contextual` on the PATH; one thread per job."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MKL_NUM_THREADS", "1")


@pytest.mark.timeout(180)
def test_ewt_workflow_trains_evaluates_and_tabulates_then_skips_on_rerun(tmp_path, activated_env, capfd):
    project = project_dir(tmp_path / "project")
    overrides = smoke_vars(tmp_path)
    spacy_project_run("ewt", project, overrides, capfd)
    for name in ("baseline_tagger", "elmo_tagger", "cove_tagger"):
        scores = json.loads((project / "metrics" / "ewt" / f"{name}.json").read_text())
        assert 0.0 <= scores["pos_acc"] <= 1.0 and 0.0 <= scores["tag_acc"] <= 1.0
    table = (project / "metrics" / "ewt.md").read_text().splitlines()
    rows = [line.split(" | ")[0].lstrip("| ") for line in table if line.startswith("| ") and "_tagger" in line]
    assert rows == ["baseline_tagger", "cove_tagger", "elmo_tagger"]
    assert "dev UPOS" in table[2] and "UPOS error reduction" in table[2]

    rerun = spacy_project_run("ewt", project, overrides, capfd)
    assert rerun.count("nothing changed") == 8  # every step: deps and outputs as the lock recorded them


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_all_workflow_covers_both_tasks(tmp_path, activated_env, capfd):
    project = project_dir(tmp_path / "project")
    spacy_project_run("all", project, smoke_vars(tmp_path), capfd)
    markdown = (project / "metrics" / "comparison.md").read_text()
    assert "### ewt" in markdown and "### sentiment" in markdown and "macro F error reduction" in markdown
    assert all(name in markdown for name in ("baseline_textcat", "elmo_textcat", "cove_textcat"))


def write_task(root: Path, task: str, scores: dict[str, tuple[dict, dict]]) -> Path:
    """metrics/TASK/PIPELINE.json (test) and training/TASK/PIPELINE/model-best/meta.json (dev)."""
    for name, (dev, test) in scores.items():
        (root / "metrics" / task).mkdir(parents=True, exist_ok=True)
        (root / "metrics" / task / f"{name}.json").write_text(json.dumps({**test, "speed": 1000.0}))
        meta = root / "training" / task / name / "model-best" / "meta.json"
        meta.parent.mkdir(parents=True)
        meta.write_text(json.dumps({"performance": dev}))
    return root / "metrics" / task


def test_table_has_dev_test_and_error_reduction_against_the_baseline(tmp_path):
    ewt = write_task(
        tmp_path,
        "ewt",
        {
            "elmo_tagger": ({"pos_acc": 0.9502, "tag_acc": 0.9431}, {"pos_acc": 0.9507, "tag_acc": 0.9445}),
            "baseline_tagger": ({"pos_acc": 0.9422, "tag_acc": 0.9340}, {"pos_acc": 0.9429, "tag_acc": 0.9356}),
        },
    )
    lines = comparison([ewt], tmp_path / "training").splitlines()
    assert lines[0] == "### ewt"
    assert lines[2] == (
        "| pipeline | dev XPOS | test XPOS | XPOS error reduction | dev UPOS | test UPOS | UPOS error reduction |"
    )
    assert lines[4] == "| baseline_tagger | 93.40 | 93.56 | – | 94.22 | 94.29 | – |"
    # UPOS: (5.71 - 4.93) / 5.71 = 13.7 %; XPOS: (6.44 - 5.55) / 6.44 = 13.8 %
    assert lines[5] == "| elmo_tagger | 94.31 | 94.45 | 13.8 % | 95.02 | 95.07 | 13.7 % |"
    assert "relative to baseline_tagger" in lines[7]


def test_table_covers_several_tasks_and_formats_auc(tmp_path):
    write_task(tmp_path, "ewt", {"baseline_tagger": ({"pos_acc": 0.9}, {"pos_acc": 0.9})})
    write_task(
        tmp_path,
        "sentiment",
        {
            "baseline_textcat": ({"cats_macro_f": 0.7}, {"cats_macro_f": 0.7545, "cats_macro_auc": 0.851}),
            "elmo_textcat": ({}, {"cats_macro_f": 0.8348, "cats_macro_auc": 0.919}),
        },
    )
    markdown = comparison([tmp_path / "metrics" / "ewt", tmp_path / "metrics" / "sentiment"], tmp_path / "training")
    assert "### ewt" in markdown and "### sentiment" in markdown
    # a dev score the meta does not hold is shown as missing, not as zero
    assert "| elmo_textcat | – | 83.48 | 32.7 % | – | 0.919 | 45.6 % |" in markdown


def test_error_reduction():
    assert error_reduction(0.95, 0.90) == pytest.approx(0.5)
    assert error_reduction(0.85, 0.90) == pytest.approx(-0.5)  # worse than the baseline
    assert error_reduction(1.0, 1.0) is None  # the baseline makes no errors: undefined


def test_table_needs_exactly_one_baseline(tmp_path):
    ewt = write_task(tmp_path, "ewt", {"elmo_tagger": ({}, {"pos_acc": 0.95})})
    with pytest.raises(ValueError, match="expected one pipeline named baseline"):
        comparison([ewt], tmp_path / "training")


def test_table_names_the_missing_inputs(tmp_path):
    (tmp_path / "metrics" / "ewt").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="holds no metrics JSON"):
        comparison([tmp_path / "metrics" / "ewt"], tmp_path / "training")
    (tmp_path / "metrics" / "ewt" / "baseline_tagger.json").write_text(json.dumps({"pos_acc": 0.9}))
    with pytest.raises(FileNotFoundError, match="baseline_tagger/model-best/meta.json not found"):
        comparison([tmp_path / "metrics" / "ewt"], tmp_path / "training")


def test_benchmark_runs_are_recorded_newest_first(tmp_path):
    """The speed scripts' --output: a new run goes above the newest entry."""
    history = tmp_path / "topic.md"
    history.write_text("# Topic\n\nNewest first.\n\n## 2026-11-29: first run\n\n| a |\n")
    machine = f"Machine: {describe_cpu()}."  # every entry names the CPU it ran on
    record_entry(history, "## 2026-12-01: second run\n\n| b |\n")
    assert history.read_text() == (
        f"# Topic\n\nNewest first.\n\n## 2026-12-01: second run\n\n{machine}\n\n| b |\n\n"
        "## 2026-11-29: first run\n\n| a |\n"
    )
    record_entry(tmp_path / "new.md", "## 2026-12-01: run\n")
    assert (tmp_path / "new.md").read_text() == f"## 2026-12-01: run\n\n{machine}\n"
    with pytest.raises(ValueError, match="starts with a '## DATE: what' heading"):
        record_entry(history, "| no heading |")
