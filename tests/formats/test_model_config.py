"""config.json is checked against one schema per model kind, naming the file and the key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from spacy_contextual.embedders import load_encoder
from spacy_contextual.errors import ModelDirError
from spacy_contextual.formats.bilm_dir import load_bilm
from spacy_contextual.hub.resolver import bundled_model_dir

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


def edited_config(source: Path, target: Path, edit) -> Path:
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    edit(config)
    (target / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return target


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c["bilm"].pop("use_skip_connections"), r"lacks the key 'bilm.use_skip_connections'"),
        (lambda c: c["bilm"].pop("lstm_dim"), r"lacks the key 'bilm.lstm_dim'"),
        (lambda c: c.pop("bilm"), r"lacks the key 'bilm'"),
        (lambda c: c["bilm"].update(lstm_dim="32"), r"bilm.lstm_dim is '32'; expected an integer >= 1"),
        (lambda c: c["bilm"].update(n_layers=-1), r"bilm.n_layers is -1; expected an integer >= 1"),
        (lambda c: c["bilm"].update(use_skip_connections="yes"), r"use_skip_connections is 'yes'; expected true"),
        (lambda c: c["bilm"].update(cell_clip=-3), r"bilm.cell_clip is -3"),
        (lambda c: c.update(extra=1), r"unknown keys \['extra'\]"),
        (lambda c: c["bilm"].update(dropout=0.1), r"unknown keys \['bilm.dropout'\]"),
        (lambda c: c.update(format_version=99), r"format_version 99 .*newer version"),
        (lambda c: c.pop("format_version"), r"lacks the key 'format_version'"),
        (lambda c: c.update(kind="cove-mt"), r"'cove-mt' model, not an 'elmo-bilm'"),
        (
            lambda c: c["bilm"].update(use_skip_connections=True),
            r"config.json (does not match its SHA-256|has \d+ bytes)",
        ),
    ],
)
def test_config_json_is_checked_against_one_schema(noskip_dir, tmp_path, edit, message):
    model = edited_config(noskip_dir, tmp_path / "edited", edit)
    with pytest.raises(ModelDirError, match=message) as error:
        load_bilm(model)
    assert str(model / "config.json") in str(error.value) or "SHA-256" in str(error.value)


def test_a_config_that_is_not_json_is_refused_naming_it(noskip_dir, tmp_path):
    model = Path(shutil.copytree(noskip_dir, tmp_path / "model"))
    (model / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelDirError, match=r"config.json is not valid JSON"):
        load_encoder("elmo", model)


def test_the_cove_schema_names_its_keys(tmp_path):
    model = edited_config(bundled_model_dir("cove"), tmp_path / "cove", lambda c: c["model"].pop("dropout"))
    with pytest.raises(ModelDirError, match=r"lacks the key 'model.dropout'"):
        load_encoder("cove", model)
