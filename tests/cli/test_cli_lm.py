"""The training commands: SIGTERM / SIGINT end them with one line and 143 / 130, saying how to resume
once a checkpoint exists, leaving no temporary behind, and the resume works; output folders that are
devices, files or the package's bundled models are refused before any work."""

import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner
from util import DATA, REPO, tiny_config, writer_leftovers

from spacy_contextual.cli import app
from spacy_contextual.hub.resolver import bundled_model_dir
from spacy_contextual.training.config import PretrainConfig
from spacy_contextual.writer import ALLOW_PACKAGE_WRITE_ENV

runner = CliRunner()


@pytest.fixture
def config_file(tmp_path):
    corpus = DATA / "lm_corpus"
    config = PretrainConfig.from_dict(
        {
            "model": tiny_config().to_dict(),
            "softmax": {"cutoffs": [50, 200], "div_value": 2.0},
            "data": {"train": [str(corpus / "train.txt.gz")], "batch_tokens": 300, "min_count": 2},
            "training": {"output_dir": str(tmp_path / "run"), "max_steps": 100000, "warmup_steps": 2,
                         "validate_minutes": 1e6, "checkpoint_minutes": 0},
        }
    )  # fmt: skip
    path = tmp_path / "config.json"
    config.save(path)
    return path


def start(config_file, *overrides):
    command = [sys.executable, "-m", "spacy_contextual", "pretrain-elmo", str(config_file), *overrides]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for(condition, process, seconds=120):
    deadline = time.time() + seconds
    while not condition():
        assert process.poll() is None and time.time() < deadline, process.communicate()[1][-2000:]
        time.sleep(0.05)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_sigterm_after_a_checkpoint_says_resume_and_the_resume_works(config_file, tmp_path):
    run = tmp_path / "run"
    process = start(config_file)
    wait_for(lambda: (run / "checkpoint" / "trainer_state.json").is_file(), process)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143 and "Traceback" not in stderr  # the progress bar's line, then the one line
    assert stderr.endswith("]\ninterrupted; run the same command with --resume to resume\n"), stderr[-300:]
    assert writer_leftovers(run) == []
    resumed = runner.invoke(app, ["pretrain-elmo", str(config_file), "--resume", "training.max_steps=3"])
    assert resumed.exit_code == 0, resumed.stderr
    assert "resumed from" in resumed.stdout


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_sigint_before_any_checkpoint_is_just_interrupted(config_file, tmp_path):
    process = start(config_file, "training.checkpoint_minutes=1000000")
    wait_for(lambda: (tmp_path / "run" / "pretrain_config.json").is_file(), process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and (stderr == "interrupted\n" or stderr.endswith("]\ninterrupted\n")), stderr


@pytest.mark.timeout(60)
def test_output_folders_that_cannot_be_written_are_refused_before_work(config_file, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    bundled = bundled_model_dir("elmo")
    for override, words in [
        (f"training.output_dir={fifo}", "device or other special file"),
        (f"training.output_dir={config_file}", "is a file"),
        (f"training.export_dir={bundled}", ALLOW_PACKAGE_WRITE_ENV),
    ]:
        result = runner.invoke(app, ["pretrain-elmo", str(config_file), override])
        assert result.exit_code == 1 and result.stderr.count("\n") == 1 and words in result.stderr, result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("command", [pytest.param("evaluate-lm", marks=pytest.mark.slow), "sense-probe"])
def test_a_long_command_on_the_bundled_model_is_interrupted_in_one_line(tmp_path, command):
    if command == "evaluate-lm":
        text = tmp_path / "text.txt"
        text.write_text("the bank of the river is steep .\n" * 200_000)
        args = ["evaluate-lm", "default", str(text)]
    else:
        text = tmp_path / "senses.jsonl"
        line = '{"word": "bank", "tokens": ["the", "bank", "of", "the", "river"], "target": 1, "sense": "%s"}\n'
        text.write_text((line % "shore" + line % "money") * 20_000)
        args = ["sense-probe", str(text), "--model", "default"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "spacy_contextual", *args], stderr=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    time.sleep(8)  # the model is loaded and the command is working
    assert process.poll() is None
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert (process.returncode, stderr.decode()) == (130, "interrupted\n")
