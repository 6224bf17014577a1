"""pretrain's checkpoints: an earlier run needs --resume or --overwrite (also after a kill between
the two renames), and checkpoints are written whole."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from util import DATA, assert_one_line_error, cli, tiny_config, writer_leftovers

from spacy_contextual.training.config import PretrainConfig
from spacy_contextual.training.trainer import pretrain
from spacy_contextual.writer import working_name

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


@pytest.fixture(scope="module")
def lm_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm_corpus")
    with gzip.open(DATA / "lm_corpus" / "train.txt.gz", "rt", encoding="utf-8") as lines:
        (root / "train.txt").write_text("".join(next(lines) for _ in range(200)), encoding="utf-8")
    return root / "train.txt"


def pretrain_config(corpus: Path, output: Path, steps: int = 2) -> PretrainConfig:
    return PretrainConfig.from_dict(
        {
            "model": tiny_config().to_dict(),
            "softmax": {"cutoffs": [50, 200], "div_value": 2.0},
            "data": {"train": [str(corpus)], "batch_tokens": 300, "chunk_sentences": 100, "min_count": 2},
            "training": {"output_dir": str(output), "max_steps": steps, "warmup_steps": 1, "checkpoint_minutes": 1e6},
        }
    )


def quiet(message: str) -> None:
    pass


def test_an_earlier_runs_checkpoint_needs_resume_or_overwrite(lm_corpus, tmp_path):
    output = tmp_path / "run"
    pretrain(pretrain_config(lm_corpus, output), log=quiet)
    checkpoint = output / "checkpoint"
    with pytest.raises(FileExistsError, match="--resume to continue that run, or --overwrite"):
        pretrain(pretrain_config(lm_corpus, output), log=quiet)
    # killed between the two renames: only the writer's old and new versions are left
    previous, new = working_name(checkpoint, "old"), working_name(checkpoint, "new")
    checkpoint.rename(previous)
    shutil.copytree(previous, new)
    config_file = tmp_path / "config.json"
    pretrain_config(lm_corpus, output).save(config_file)
    assert_one_line_error(cli("pretrain-elmo", config_file), f"{previous.name} holds a checkpoint", "--overwrite")
    assert (previous / "trainer_state.json").is_file()  # nothing was deleted
    summary = pretrain(pretrain_config(lm_corpus, output, steps=4), resume=True, log=quiet)  # from the old one
    assert summary["step"] == 4
    summary = pretrain(pretrain_config(lm_corpus, output, steps=1), overwrite=True, log=quiet)
    assert summary["step"] == 1 and not previous.exists() and not new.exists()


def test_checkpoints_are_written_whole(lm_corpus, tmp_path):
    output = tmp_path / "run"
    pretrain(pretrain_config(lm_corpus, output), log=quiet)
    assert writer_leftovers(output) == []
    assert (output / "checkpoint" / "model" / "manifest.json").is_file()
