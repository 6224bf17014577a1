"""Sizes in config.json / options.json are bounded and cannot make a loader allocate more than the weight
files justify: a re-signed config with huge sizes is refused in one line, quickly, for the bundled ELMo and
CoVe models, a bilm-tf options.json and a CoVe .pth."""

import json
import shutil
import time

import pytest
import torch
from typer.testing import CliRunner
from util import tiny_bilm

from spacy_contextual.cli import app
from spacy_contextual.errors import ContextualError
from spacy_contextual.formats.bilm_dir import load_bilm
from spacy_contextual.formats.bilm_tf import export_bilm_tf, load_bilm_tf
from spacy_contextual.formats.cove_dir import load_cove_layers
from spacy_contextual.formats.cove_pth import CovePthError, expected_shapes, load_cove_pth
from spacy_contextual.formats.manifest import write_manifest
from spacy_contextual.formats.model_dir import model_files
from spacy_contextual.hub.resolver import bundled_model_dir

runner = CliRunner()


def resigned_copy(kind, tmp_path, change):
    """A copy of the bundled ``kind`` model whose config.json ``change`` edits, with a matching manifest."""
    model = shutil.copytree(bundled_model_dir(kind), tmp_path / kind)
    config = json.loads((model / "config.json").read_text())
    change(config)
    (model / "config.json").write_text(json.dumps(config))
    write_manifest(model, model_files(model))
    return model


def refused_quickly(load, *args, match):
    start = time.perf_counter()
    with pytest.raises(ContextualError, match=match) as refused:
        load(*args)
    assert time.perf_counter() - start < 10.0  # building what the config asks for would take minutes or all memory
    assert "\n" not in str(refused.value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "layers, match",
    [(100_000, r"n_layers is 100000; expected an integer >= 1 and <= 64"), (64, "larger than its weights")],
)
def test_bundled_elmo_with_more_layers_than_its_weights(tmp_path, layers, match):
    model = resigned_copy("elmo", tmp_path, lambda c: c["bilm"].update(n_layers=layers))
    refused_quickly(load_bilm, model, match=match)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("key", ["lstm_dim", "projection_dim", "char_embedding_dim", "n_characters"])
def test_bundled_elmo_with_wider_layers_than_its_weights(tmp_path, key):
    model = resigned_copy("elmo", tmp_path, lambda c: c["bilm"].update({key: 60_000}))
    refused_quickly(load_bilm, model, match="larger than its weights|implies|must not exceed")


@pytest.mark.timeout(60)
def test_bundled_cove_with_more_layers_than_its_weights(tmp_path):
    def change(config):
        section = config.get("model", config)
        section.update({k: 64 for k in ("encoder_layers", "decoder_layers", "num_layers") if k in section})
        section.update({k: 60_000 for k in ("encoder_hidden", "decoder_hidden", "hidden_dim") if k in section})

    model = resigned_copy("cove", tmp_path, change)
    refused_quickly(load_cove_layers, model, match="larger than its weights")


@pytest.mark.timeout(60)
def test_write_manifest_refuses_to_sign_an_unbounded_config(tmp_path):
    model = shutil.copytree(bundled_model_dir("elmo"), tmp_path / "elmo")
    config = json.loads((model / "config.json").read_text())
    config["bilm"]["n_layers"] = 100_000
    (model / "config.json").write_text(json.dumps(config))
    result = runner.invoke(app, ["write-manifest", str(model)])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "n_layers is 100000" in result.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "lstm, match",
    [
        ({"n_layers": 100_000}, r"n_layers is 100000"),
        ({"n_layers": 64}, "larger than its weights"),
        ({"dim": 60_000}, "larger than its weights"),
    ],
)
def test_bilm_tf_options_larger_than_the_weights(tmp_path, lstm, match):
    options, weights = export_bilm_tf(tiny_bilm(), tmp_path)
    content = json.loads(options.read_text())
    content["lstm"].update(lstm)
    options.write_text(json.dumps(content))
    refused_quickly(load_bilm_tf, options, weights, match=match)


@pytest.mark.timeout(60)
def test_cove_pth_shapes_are_checked(tmp_path):
    state = {name: torch.zeros(shape) for name, shape in expected_shapes().items()}
    state["weight_hh_l1"] = torch.zeros(4, 3)
    path = tmp_path / "wmtlstm.pth"
    torch.save(state, path)
    with pytest.raises(CovePthError, match=r"weight_hh_l1 has shape \(4, 3\), expected \(1200, 300\)"):
        load_cove_pth(path)
