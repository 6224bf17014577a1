"""What a command reads is passed explicitly: the command line's one runner opens
``writer.command_reads(inputs)``, which sets a ``ContextVar``; the resolver and the text readers add
what they open (``note_read``); every output check reads it. No module keeps it as a global."""

from __future__ import annotations

import ast
import threading
from contextvars import copy_context
from pathlib import Path

import pytest

from spacy_contextual import writer
from spacy_contextual.hub.resolver import resolve_model_dir
from spacy_contextual.text_files import numbered_lines
from spacy_contextual.writer import OutputError, check_output_file, command_reads, note_read, read_by_command

PACKAGE = Path(writer.__file__).parent


def test_what_a_command_reads_lives_in_the_command_and_its_context(tmp_path, tiny_model_dir):
    text = tmp_path / "in.txt"
    text.write_text("the bank .\n", encoding="utf-8")
    assert read_by_command() == ()
    note_read(text)  # outside a command: nothing is kept
    assert read_by_command() == ()
    with command_reads([tmp_path / "input.txt", None, "-"]):
        list(numbered_lines(text))  # the text reader adds what it opens
        model = resolve_model_dir("elmo", str(tiny_model_dir))  # and so does the resolver
        assert read_by_command() == (tmp_path / "input.txt", text, model)
        with pytest.raises(OutputError, match="which this command reads"):
            check_output_file(model / "config.json")
        seen = []
        thread = threading.Thread(target=lambda: seen.append(read_by_command()))
        thread.start()
        thread.join()
        assert seen == [()]  # another thread is not this command
        assert copy_context().run(read_by_command) == read_by_command()  # a copy of this context is
    assert read_by_command() == ()  # the command is over: nothing is left behind


def test_nested_commands_restore_what_the_outer_one_reads(tmp_path):
    with command_reads([tmp_path / "outer"]):
        with command_reads([tmp_path / "inner"]):
            note_read(tmp_path / "more")
            assert read_by_command() == (tmp_path / "inner", tmp_path / "more")
        assert read_by_command() == (tmp_path / "outer",)


@pytest.mark.parametrize("module", ["writer.py", "text_files.py", "hub/resolver.py", "cli/params.py"])
def test_the_modules_of_the_flow_keep_no_global_state(module):
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Global)], f"{module} assigns a global"
