"""Every command fails with one line on stderr and exit code 1 (the installed command too), and
--debug / SPACY_CONTEXTUAL_DEBUG show the traceback.

The one typer app: SIGINT / SIGTERM end any command with one line and exit code 130 / 143, with the way
to resume where a command can; the cleanup of the interrupted code still runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from util import (
    GOOD_SENSE,
    REPO,
    SKIP,
    assert_one_line_error,
    bundled_copy,
    cli,
    flip_middle,
    sense_file,
    sentences_file,
)

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


def test_a_bad_weight_file_is_one_line(tmp_path):
    truncated = tmp_path / "weights.hdf5"
    truncated.write_bytes((SKIP / "lm_weights.hdf5").read_bytes()[:100_000])
    result = cli("elmo", sentences_file(tmp_path), tmp_path / "out.hdf5", "--all",
                 "--options-file", SKIP / "options.json", "--weight-file", truncated)  # fmt: skip
    assert_one_line_error(result, "weights.hdf5", "truncated")
    model = bundled_copy("elmo", tmp_path)
    flip_middle(model / "model.safetensors")
    result = cli("sense-probe", sense_file(tmp_path / "ok.jsonl", [GOOD_SENSE] * 4), "--model", model)
    assert_one_line_error(result, "model.safetensors does not match its SHA-256")


def test_debug_shows_the_traceback(tmp_path, monkeypatch):
    english = tmp_path / "en.txt"
    english.write_text("A man .\n", encoding="utf-8")
    result = cli("--debug", "translate", english, "--model", tmp_path / "missing")
    assert isinstance(result.exception, FileNotFoundError)
    monkeypatch.setenv("SPACY_CONTEXTUAL_DEBUG", "1")
    assert isinstance(cli("translate", english, "--model", tmp_path / "missing").exception, FileNotFoundError)


@pytest.mark.integration
def test_the_installed_command_prints_one_line_and_exits_1(tmp_path):
    bad = sense_file(tmp_path / "bad.jsonl", [GOOD_SENSE, "{not json"])
    done = subprocess.run(
        [sys.executable, "-m", "spacy_contextual", "sense-probe", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [f"error: {bad}:2: not JSON (Expecting property name enclosed in double "
                                                "quotes at column 2)"]  # fmt: skip


LONG_COMMANDS = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path

    import typer

    from spacy_contextual.cli import app
    from spacy_contextual.cli._app import say_on_interrupt

    @app.command("wait")
    def wait(ctx: typer.Context, marker: Path, hint: str = typer.Option("", "--hint")):
        say_on_interrupt(ctx, lambda: hint or None)  # asked when the signal arrives
        try:
            print("running", flush=True)
            time.sleep(60)
        finally:
            marker.write_text("cleaned up")

    @app.command("plain")
    def plain(marker: Path):
        try:
            print("running", flush=True)
            time.sleep(60)
        finally:
            marker.write_text("cleaned up")

    class SignalledInItsFinalizer:
        def __del__(self):  # the handler runs in here, where Python drops what it raises
            os.kill(os.getpid(), signal.SIGTERM)
            sum(range(100_000))

    @app.command("finalizer")
    def finalizer(marker: Path):
        try:
            print("running", flush=True)
            SignalledInItsFinalizer()
            time.sleep(60)
        finally:
            marker.write_text("cleaned up")

    app(prog_name="spacy-contextual")
    """
)


def interrupt(tmp_path, signum, *args, send=True):
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-c", LONG_COMMANDS, *args, str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert process.stdout.readline() == "running\n"
    if send:
        process.send_signal(signum)
    _, stderr = process.communicate(timeout=30)
    assert marker.read_text() == "cleaned up"
    return process.returncode, stderr


@pytest.mark.integration
@pytest.mark.timeout(60)
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_signal_is_one_line_and_its_exit_code(tmp_path, signum, code):
    returncode, stderr = interrupt(tmp_path, signum, "plain")
    assert (returncode, stderr) == (code, "interrupted\n")


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_command_with_nothing_to_resume_says_interrupted(tmp_path):
    returncode, stderr = interrupt(tmp_path, signal.SIGTERM, "wait")
    assert (returncode, stderr) == (143, "interrupted\n")


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_only_rank_0_of_a_torchrun_job_prints_the_line(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    assert interrupt(tmp_path, signal.SIGINT, "plain") == (130, "")


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_command_names_its_own_way_to_resume(tmp_path):
    returncode, stderr = interrupt(tmp_path, signal.SIGINT, "wait", "--hint", "run the same command to resume")
    assert (returncode, stderr) == (130, "interrupted; run the same command to resume\n")


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_signal_that_lands_in_a_finalizer_still_stops_the_command(tmp_path):
    returncode, stderr = interrupt(tmp_path, signal.SIGTERM, "finalizer", send=False)
    assert (returncode, stderr) == (143, "interrupted\n")


def test_signal_handlers_are_restored_after_a_command():
    from spacy_contextual.cli._app import stop_signals_interrupt

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT), sys.unraisablehook
    with stop_signals_interrupt():
        assert signal.getsignal(signal.SIGTERM) is not before[0]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT), sys.unraisablehook) == before
