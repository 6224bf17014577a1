"""The README's quick-start snippet runs as written (it cannot rot)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_block(marker: str) -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {marker} -->\s*```\w*\n(.*?)```", text, re.S)
    assert match, f"README.md has no code block after <!-- {marker} -->"
    return match.group(1)


def test_install_and_test_commands_are_the_ci_ones():
    assert readme_block("install").strip().startswith("pip install torch==2.13.0 &&")
    assert "pytest" in readme_block("test")


def test_quickstart_snippet_runs(capsys):
    from spacy_contextual.embedders.elmo import DEFAULT_MODEL_DIR

    if not (DEFAULT_MODEL_DIR / "config.json").is_file():
        pytest.fail("the bundled ELMo model is missing from spacy_contextual/assets/elmo")
    exec(compile(readme_block("quickstart"), "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("ContextualData(") and lines[1].startswith("(3, 9, ")
    same_sense, other_sense = float(lines[2]), float(lines[3])
    assert same_sense > other_sense
