"""``train-cove``: an earlier run's checkpoint needs --resume or --overwrite."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from util import DATA, assert_one_line_error, cli

from spacy_contextual.formats.word_vectors import write_glove
from spacy_contextual.mt_text import tokenize
from spacy_contextual.writer import working_name

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory):
    """A tiny Multi30k slice, GloVe rows and an MT config for one training step of train-cove."""
    root = tmp_path_factory.mktemp("mt")
    for split, n in (("train", 40), ("val", 8)):
        for lang in ("en", "de"):
            with gzip.open(DATA / "multi30k" / f"{split}.{lang}.gz", "rt", encoding="utf-8") as lines:
                text = "".join(next(lines) for _ in range(n))
            with gzip.open(root / f"{split}.{lang}.gz", "wt", encoding="utf-8") as out:
                out.write(text)
    words = sorted({w for line in gzip.open(root / "train.en.gz", "rt") for w in tokenize(line)})
    write_glove(root / "glove.txt", words, np.random.default_rng(0).normal(size=(len(words), 8)).astype(np.float32))
    config = f"""
[paths]
glove = "{root / "glove.txt"}"
train_source = "{root / "train.en.gz"}"
train_target = "{root / "train.de.gz"}"
val_source = "{root / "val.en.gz"}"
val_target = "{root / "val.de.gz"}"

[vocab]
oov = "zero"
source_min_count = 1
target_min_count = 1

[model]
embedding_dim = 8
encoder_hidden = 6
target_embedding_dim = 8
decoder_hidden = 8

[training]
seed = 0
threads = 1
optimizer = "adam"
learning_rate = 0.01
batch_size = 16
grad_clip = 5.0
max_epochs = 1
max_steps = 1
eval_every_steps = 0
checkpoint_every_steps = 1
"""
    (root / "mt.cfg").write_text(config, encoding="utf-8")
    return root / "mt.cfg"


def test_train_cove_refuses_an_earlier_run_without_resume_or_overwrite(mt_run, tmp_path):
    output = tmp_path / "cove"
    assert cli("train-cove", mt_run, output).exit_code == 0
    assert json.loads((output / "last" / "config.json").read_text())["info"]["longest_training_sentence"] >= 1
    previous = working_name(output / "last", "old")  # a kill between the writer's two renames leaves this
    (output / "last").rename(previous)
    assert_one_line_error(
        cli("train-cove", mt_run, output), f"{previous.name} holds a checkpoint", "--resume", "--overwrite"
    )
    assert previous.is_dir()
    assert cli("train-cove", mt_run, output, "--overwrite").exit_code == 0
    assert (output / "last").is_dir() and not previous.exists()
