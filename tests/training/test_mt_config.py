"""The CoVe MT training config: the shipped mt.cfg reads into MTConfig, and unknown sections or keys,
values out of their choices and missing paths are refused when the config is read, naming the key."""

import pytest
from confection import Config
from util import REPO

from spacy_contextual.errors import ContextualError
from spacy_contextual.training.mt_config import MTConfig

PATHS = {"glove": "g.txt", "train_source": "a", "train_target": "b", "val_source": "c", "val_target": "d"}


def test_the_shipped_config_reads_and_round_trips():
    shipped = Config().from_disk(REPO / "spacy_contextual" / "assets" / "cove" / "mt.cfg", interpolate=True)
    config = MTConfig.from_dict(shipped)
    assert config.paths.train_source.endswith("multi30k/train.en.gz") and config.vocab.input_std == 0.4
    assert config.model["attention_form"] == "seed" and config.training.checkpoint_every_steps == 100
    assert MTConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    "data, message",
    [
        ({"paths": PATHS, "trainig": {}}, r"unknown config sections \['trainig'\]"),
        ({"paths": PATHS, "training": {"lr": 0.1}}, r"unknown keys in \[training\]: \['lr'\]"),
        ({"paths": PATHS, "model": {"hidden": 8}}, r"unknown keys in \[model\]: \['hidden'\]"),
        ({"paths": PATHS, "model": {"source_vocab_size": 8}}, r"unknown keys in \[model\]"),  # set from the data
        ({"paths": PATHS, "vocab": {"oov": "skip"}}, r"vocab.oov must be 'zero' or 'random', got 'skip'"),
        ({"paths": PATHS, "vocab": {"target": "chars"}}, r"vocab.target must be 'words' or 'bpe'"),
        ({"paths": PATHS, "training": {"optimizer": "adagrad"}}, r"training.optimizer must be 'adam' or 'sgd'"),
        ({"paths": {"glove": "g.txt"}}, r"\[paths\]: .*missing .*'train_source'"),
    ],
)
def test_bad_configs_are_refused_when_read(data, message):
    with pytest.raises(ContextualError, match=message):
        MTConfig.from_dict(data)
