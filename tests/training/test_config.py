"""Out-of-range training options are refused when the config loads, before any work, in one line."""

import json
import time

import pytest
from typer.testing import CliRunner
from util import REPO

from spacy_contextual.cli import app
from spacy_contextual.errors import ContextualError
from spacy_contextual.training.config import PretrainConfig

runner = CliRunner()
SHIPPED = REPO / "configs" / "pretrain_elmo_default.json"

OUT_OF_RANGE = [
    ("data.batch_tokens", 2**62),
    ("data.batch_tokens", 0),
    ("data.batch_tokens", -5),
    ("training.max_steps", -1),
    ("training.max_steps", 0),
    ("training.warmup_steps", -3),
    ("training.lr", "NaN"),
    ("training.dropout", 1.5),
    ("training.num_threads", 0),
    ("data.bptt_steps", 2**40),
    ("softmax.negatives", 0),
    ("softmax.cutoffs", [10000, 2000]),
    ("model.n_layers", 100000),
    ("model.lstm_dim", 2**30),
    ("training.seed", -1),
]


@pytest.mark.parametrize("key, value", OUT_OF_RANGE)
def test_out_of_range_values_are_refused_on_load(key, value):
    with pytest.raises(ContextualError, match=key.replace(".", r"\.") + " is"):
        PretrainConfig.load(SHIPPED, [f"{key}={json.dumps(value)}"])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", [["pretrain-elmo", SHIPPED], ["finetune-elmo", "default", SHIPPED]])
def test_the_commands_refuse_them_before_work_starts(tmp_path, command):
    start = time.perf_counter()
    result = runner.invoke(
        app, [str(arg) for arg in command] + [f"training.output_dir={tmp_path / 'run'}", f"data.batch_tokens={2**62}"]
    )
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "data.batch_tokens is 4611686018427387904; expected an integer >= 1 and <= 16_777_216" in result.stderr
    assert time.perf_counter() - start < 5 and not (tmp_path / "run").exists()


def test_the_shipped_configs_are_in_range():
    paths = sorted((REPO / "configs").glob("*.json"))
    assert paths
    for path in paths:
        config = PretrainConfig.load(path)
        assert config.training.max_steps >= 1 and config.data.batch_tokens >= 1, path.name


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "override, value",
    [
        ("training.batch_size", 2**62),
        ("training.batch_size", 0),
        ("training.max_steps", -1),
        ("model.decoder_layers", 10**5),
    ],
)
def test_train_cove_refuses_out_of_range_values_before_work(tmp_path, override, value):
    mt_config = REPO / "spacy_contextual" / "assets" / "cove" / "mt.cfg"
    result = runner.invoke(app, ["train-cove", str(mt_config), str(tmp_path / "run"), f"--{override}", str(value)])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert f"{override} is {value}; expected an integer" in result.stderr
    assert not (tmp_path / "run").exists()
