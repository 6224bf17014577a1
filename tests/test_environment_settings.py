"""Every ``SPACY_CONTEXTUAL_*`` variable goes through ``environment.py``: the package is grepped for the
names it mentions, each must be declared there with its type and range, and each is fed values that
its type refuses (one line naming the variable). No module reads such a variable from ``os.environ``
itself, so a new variable is covered as soon as it appears. Also the cases that once failed: a deadline
that killed the timer thread, a timeout that overflowed the socket's wait, a byte limit of 0.5 that
became 0, ``OFFLINE=2`` that downloaded."""

from __future__ import annotations

import ast
import importlib
import re
import threading
import time
from pathlib import Path

import pytest
from util import assert_one_line_error, cli

import spacy_contextual
from spacy_contextual import environment
from spacy_contextual.errors import ContextualError

PACKAGE = Path(spacy_contextual.__file__).parent
REPO = PACKAGE.parent
VARIABLE = re.compile(r"SPACY_CONTEXTUAL_[A-Z0-9_]*[A-Z0-9]")
BAD = {
    environment.Flag: ["2", "maybe", "on please", "-1", "1" * 5000],
    environment.Number: ["x", "nan", "inf", "-inf", "1e400", "1" * 5000, "1e10", "-1"],
    environment.Text: ["\x01model", "a" * 5000, "two\nlines"],
    environment.Location: ["~nosuchuser-of-this-test/x", "a" * 5000, "\x1b[31m"],
    environment.Locations: ["~nosuchuser-of-this-test/x", "a" * 5000],
}


def package_sources() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def variables_in_package() -> set[str]:
    return {name for path in package_sources() for name in VARIABLE.findall(path.read_text(encoding="utf-8"))}


def test_every_variable_the_package_names_is_declared_with_a_type():
    found = variables_in_package()
    assert found, "the grep found no variable: its pattern is wrong"
    assert found - set(environment.VARIABLES) == set(), "declare these in spacy_contextual/environment.py, with a type"
    assert set(environment.VARIABLES) - found == set(), "declared but never used: remove them"
    assert "SPACY_CONTEXTUAL_FUSED_CELL" in found and "SPACY_CONTEXTUAL_OFFLINE" in found


@pytest.mark.parametrize("name", sorted(variables_in_package()))
def test_each_variable_refuses_what_its_type_does_not_allow_in_one_line(name, monkeypatch):
    variable = environment.VARIABLES[name]
    bad = list(BAD[type(variable)])
    if isinstance(variable, environment.Number):
        bad = [value for value in bad if value != "1e10" or variable.maximum < 1e10]
        bad += [f"{variable.maximum * 2:.0f}", f"{variable.minimum - 1}"]
        if variable.integer:
            bad.append("0.5")
    for value in bad:
        monkeypatch.setenv(name, value)
        with pytest.raises(ContextualError) as refused:
            variable.get()
        message = str(refused.value)
        assert message.startswith(f"{name}=") or message.startswith(f"{name}: "), message
        assert "\n" not in message and len(message) < 400, message
    monkeypatch.delenv(name)
    assert variable.get() == getattr(variable, "default", None) or isinstance(variable, environment.Locations)


def test_good_values_are_read_with_their_type(monkeypatch, tmp_path):
    for text, value in [("ON", True), (" no ", False), ("1", True), ("false", False)]:
        monkeypatch.setenv(environment.OFFLINE.name, text)
        assert environment.OFFLINE.get() is value
    monkeypatch.setenv(environment.MAX_DOWNLOAD_BYTES.name, "1_000_000")
    assert environment.MAX_DOWNLOAD_BYTES.get() == 1_000_000 and isinstance(environment.MAX_DOWNLOAD_BYTES.get(), int)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(environment.HOME.name, "~/cache")
    assert environment.HOME.get() == tmp_path / "cache"
    monkeypatch.setenv(environment.PIPELINE.name, f"~/a{':'}{tmp_path / 'b'}")
    assert environment.PIPELINE.get() == [tmp_path / "a", tmp_path / "b"]


def environment_reads(tree: ast.AST):
    """(line, key expression) of every read of ``os.environ`` / ``os.getenv`` and every typer ``envvar=``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = ast.unparse(node.func)
            if function in ("os.environ.get", "os.getenv", "environ.get", "getenv") and node.args:
                yield node.lineno, node.args[0]
            for keyword in node.keywords:
                if keyword.arg == "envvar":
                    yield node.lineno, keyword.value
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if ast.unparse(node.value) in ("os.environ", "environ"):
                yield node.lineno, node.slice
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In) for op in node.ops):
            if any(ast.unparse(other) in ("os.environ", "environ") for other in node.comparators):
                yield node.lineno, node.left


def test_no_module_reads_a_variable_but_through_settings():
    """A module that read ``os.environ[...]`` for one of ours would escape the types and ranges."""
    found = []
    for path in package_sources():
        if path.name in ("environment.py", "__main__.py"):
            continue
        module_name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        module = importlib.import_module(module_name)
        for line, key in environment_reads(ast.parse(path.read_text(encoding="utf-8"))):
            try:
                value = eval(compile(ast.Expression(key), str(path), "eval"), vars(module))  # noqa: S307
            except Exception:  # a local name: judged by its text
                value = ast.unparse(key)
            if VARIABLE.search(str(value)) or str(value).endswith("_ENV"):
                found.append(f"{path.relative_to(REPO)}:{line} reads {value}")
    assert found == []


def test_the_docs_list_every_variable_with_what_it_accepts():
    text = (REPO / "docs" / "reliability.md").read_text(encoding="utf-8")
    for name, variable in environment.VARIABLES.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}`")), None)
        assert row is not None, f"docs/reliability.md has no row for {name}"
        assert variable.accepts.replace("`", "") in row.replace("`", ""), (name, row)


# -- the cases that once failed -----------------------------------------------------------------


def test_a_huge_deadline_is_refused_and_the_longest_keeps_its_timer_alive(monkeypatch):
    from spacy_contextual.hub.deadline import Deadline
    from spacy_contextual.hub.limits import DEADLINE_ENV, limit

    monkeypatch.setenv(DEADLINE_ENV, "1e10")
    with pytest.raises(ContextualError, match=rf"^{DEADLINE_ENV}='1e10' is not a number from 0.001 to"):
        limit(DEADLINE_ENV)
    monkeypatch.setenv(DEADLINE_ENV, str(environment.LONGEST_TIMER_S))
    errors = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    with Deadline(limit(DEADLINE_ENV)) as deadline:
        time.sleep(0.2)
        assert deadline._timer.is_alive() and not errors


def test_a_timeout_beyond_what_a_socket_can_wait_is_refused_naming_the_variable(monkeypatch):
    """1e10 s once became every download's ``OverflowError``; the most poll() can wait is accepted."""
    import socket

    from urllib3.util.wait import wait_for_read

    from spacy_contextual.hub.limits import TIMEOUT_ENV, limit

    monkeypatch.setenv(TIMEOUT_ENV, "1e10")
    with pytest.raises(ContextualError, match=rf"^{TIMEOUT_ENV}='1e10' is not a number from 0.001 to 2,147,483"):
        limit(TIMEOUT_ENV)
    monkeypatch.setenv(TIMEOUT_ENV, str(environment.LONGEST_POLL_S))
    first, second = socket.socketpair()
    with first, second:
        second.send(b"x")
        assert wait_for_read(first, timeout=limit(TIMEOUT_ENV))


def test_a_byte_limit_of_a_fraction_is_refused_not_rounded_to_zero(monkeypatch):
    from spacy_contextual.hub.limits import MAX_BYTES_ENV, byte_limit

    monkeypatch.setenv(MAX_BYTES_ENV, "0.5")
    with pytest.raises(ContextualError, match=rf"^{MAX_BYTES_ENV}='0.5' is not a whole number from 1 to"):
        byte_limit(MAX_BYTES_ENV)


def test_offline_2_is_refused_before_anything_is_downloaded(monkeypatch, tmp_path):
    monkeypatch.setenv(environment.HOME.name, str(tmp_path / "cache"))
    monkeypatch.setenv(environment.OFFLINE.name, "2")
    result = cli("download", "elmo-small")
    assert_one_line_error(result, "SPACY_CONTEXTUAL_OFFLINE='2' is not a switch")
    assert not (tmp_path / "cache" / "elmo-small").exists()


def test_a_bad_debug_switch_is_one_line(monkeypatch):
    monkeypatch.setenv(environment.DEBUG.name, "verbose")
    assert_one_line_error(cli("models"), "SPACY_CONTEXTUAL_DEBUG='verbose' is not a switch")
    monkeypatch.setenv(environment.DEBUG.name, "on")
    assert cli("models").exit_code == 0
