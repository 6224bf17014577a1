"""The README's install, test and quick-start blocks are the ones CI runs, the quick start prints what
its comments say, and the quick training run ends with a score at its last step (they cannot rot)."""

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from util import SHARED

README = Path(__file__).resolve().parents[1] / "README.md"
CI = Path(__file__).resolve().parents[1] / ".ci" / "run"


def readme_block(marker: str) -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {marker} -->\s*```\w*\n(.*?)```", text, re.S)
    assert match, f"README.md has no code block after <!-- {marker} -->"
    return match.group(1)


def test_install_command_puts_the_cpu_torch_first_then_the_package_with_its_extras():
    commands = [shlex.split(part) for part in readme_block("install").strip().split("&&")]
    assert commands[0] == ["pip", "install", "torch==2.13.0"]  # the CPU build on disk, before anything can pull CUDA
    assert commands[1][:3] == ["pip", "install", "-e"] and commands[1][3] == ".[app,dev]"
    assert len(commands) == 2


def test_ci_runs_the_readme_blocks_and_lint():
    ci = CI.read_text(encoding="utf-8")
    assert "readme_block install" in ci and "readme_block test" in ci
    assert "ruff check . && ruff format --check ." in ci
    assert shlex.split(readme_block("test").strip())[:3] == ["python", "-m", "pytest"]


def test_quickstart_snippet_prints_what_its_comments_say(capsys):
    snippet = readme_block("quickstart")
    exec(compile(snippet, "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    commented = re.findall(r"^print\(.*?\)\s+# (.*)$", snippet, re.M)
    assert lines[0] == commented[0]  # the ContextualData repr, exactly
    assert lines[1].startswith(commented[1].split(":")[0])  # "(3, 9, 256)"
    same_sense, other_sense = float(lines[2]), float(lines[3])
    assert same_sense > other_sense
    for printed, comment in zip(lines[2:4], commented[2:4], strict=True):  # the values the comments promise
        assert abs(float(printed) - float(comment.split(":")[0])) <= 0.002, (printed, comment)


def test_the_command_table_lists_every_command():
    import typer

    from spacy_contextual.cli import app

    text = README.read_text(encoding="utf-8")
    table = text[text.index("| Command | What it does |") :].split("\n\n")[0]
    named = set(re.findall(r"`([a-z][a-z-]+)[ `]", table))
    group = typer.main.get_command(app)
    assert set(group.list_commands(None)) <= named


def test_the_minimal_training_config_is_the_shipped_one():
    """The README's ``[components.elmo]`` + tagger listener block is configs/elmo_minimal.cfg's."""
    from spacy.util import load_config, load_config_from_str

    match = re.search(r"```ini\n(\[nlp\].*?)```", README.read_text(encoding="utf-8"), re.S)
    shown = load_config_from_str(match.group(1), interpolate=False)
    shipped = load_config(README.parent / "configs" / "elmo_minimal.cfg", interpolate=False)
    for section in ("nlp", "components"):
        assert {k: shipped[section][k] for k in shown[section]} == dict(shown[section])


@pytest.mark.integration  # runs spacy train
@pytest.mark.timeout(900)
@pytest.mark.skipif(not (SHARED / "data" / "ud_english_ewt").is_dir(), reason="needs ../shared/data/ud_english_ewt")
def test_the_quick_training_run_ends_with_a_score_at_its_last_step(tmp_path):
    """The README's quick-train block as written, in a folder laid out like a checkout: spaCy's table gets
    a row for step 20 (the last one) with a TAG_ACC, not only the row of step 0."""
    block = readme_block("quick-train")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "configs").symlink_to(README.parent / "configs")
    (tmp_path / "shared").symlink_to(SHARED)  # ../shared, beside the checkout
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=checkout, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s", done.stdout, re.M)
    assert [int(step) for _, step, _ in rows] == [0, 20], done.stdout[-3000:]
    assert 0 < float(rows[-1][2]) <= 100  # TAG_ACC at step 20


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_a_checkout_without_shared_skips_what_reads_it_with_the_reason(tmp_path):
    """As README says: beside a checkout with no ../shared, what reads it is skipped with the reason "needs
    ../shared": a module that names its paths (also one that reads a fixture when it is imported) whole, before it
    is imported, and a test whose fixture reads it; nothing fails to collect."""
    import shutil
    import sys

    checkout = tmp_path / "checkout"
    checkout.mkdir()
    repo = Path(__file__).resolve().parents[1]
    for entry in repo.iterdir():
        if entry.name == "tests":
            shutil.copytree(entry, checkout / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        elif not entry.name.startswith("."):
            (checkout / entry.name).symlink_to(entry)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--collect-only", "tests"],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert result.returncode == 0 and "ERROR collecting" not in result.stdout, result.stdout[-3000:]
    skipped = re.findall(r"SKIPPED \[1\] \S+: (tests/\S+\.py) needs \.\./shared", result.stdout)
    assert {"tests/formats/test_manylangs.py", "tests/pipeline/test_manylangs_component.py"} <= set(skipped)
    assert "tests/test_structure.py" not in skipped  # a module that does not read ../shared is collected
    run = subprocess.run(  # a module whose fixture reads ../shared (training/conftest.py's corpus): its tests skip
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests/training/test_checkpoint.py"],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0 and "its fixture corpus needs ../shared" in run.stdout, run.stdout[-3000:]
