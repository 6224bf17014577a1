"""The one typer app: SIGINT / SIGTERM end any command with one line and exit code 130 / 143, with the way
to resume where a command can; the cleanup of the interrupted code still runs."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from util import REPO

# A stand-in long command on the real app: it signals it is running, then waits; its cleanup leaves a file.
LONG_COMMANDS = textwrap.dedent(
    """
    import sys, time
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

    app(prog_name="spacy-contextual")
    """
)


def interrupt(tmp_path, signum, *args):
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
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=30)
    assert marker.read_text() == "cleaned up"
    return process.returncode, stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_signal_is_one_line_and_its_exit_code(tmp_path, signum, code):
    returncode, stderr = interrupt(tmp_path, signum, "plain")
    assert (returncode, stderr) == (code, "interrupted\n")


@pytest.mark.timeout(60)
def test_a_command_with_nothing_to_resume_says_interrupted(tmp_path):
    returncode, stderr = interrupt(tmp_path, signal.SIGTERM, "wait")
    assert (returncode, stderr) == (143, "interrupted\n")


@pytest.mark.timeout(60)
def test_only_rank_0_of_a_torchrun_job_prints_the_line(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    assert interrupt(tmp_path, signal.SIGINT, "plain") == (130, "")


@pytest.mark.timeout(60)
def test_a_command_names_its_own_way_to_resume(tmp_path):
    returncode, stderr = interrupt(tmp_path, signal.SIGINT, "wait", "--hint", "run the same command to resume")
    assert (returncode, stderr) == (130, "interrupted; run the same command to resume\n")


def test_signal_handlers_are_restored_after_a_command():
    from spacy_contextual.cli._app import stop_signals_interrupt

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with stop_signals_interrupt():
        assert signal.getsignal(signal.SIGTERM) is not before[0]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
