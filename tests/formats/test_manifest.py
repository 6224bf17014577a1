"""Manifest names stay inside the model directory: no ``..``, no absolute path, no symlink out of it
(bundled ELMo copies); links inside the directory still work."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from spacy_contextual.cli import app
from spacy_contextual.errors import ModelDirError
from spacy_contextual.formats.bilm_dir import load_bilm
from spacy_contextual.formats.bundled import bundled_model_dir
from spacy_contextual.formats.manifest import ALGORITHM, MANIFEST_NAME, file_digest

runner = CliRunner()


@pytest.fixture
def elmo_copy(tmp_path):
    return shutil.copytree(bundled_model_dir("elmo"), tmp_path / "models" / "elmo")


def add_entry(model, name, target):
    """List ``name`` in the manifest with the true size and digest of ``target``, as an attacker would."""
    manifest = json.loads((model / MANIFEST_NAME).read_text())
    manifest["files"][name] = {"bytes": target.stat().st_size, ALGORITHM: file_digest(target)}
    (model / MANIFEST_NAME).write_text(json.dumps(manifest))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", ["../../secret.txt", "{secret}", "sub/../../../secret.txt"])
def test_a_manifest_naming_a_file_outside_is_refused(elmo_copy, tmp_path, name):
    secret = tmp_path / "secret.txt"
    secret.write_text("not the model's\n")
    name = name.format(secret=secret)
    add_entry(elmo_copy, name, secret)
    with pytest.raises(ModelDirError, match="not a file inside") as refused:
        load_bilm(elmo_copy)
    assert str(elmo_copy / MANIFEST_NAME) in str(refused.value)


@pytest.mark.timeout(60)
def test_a_weight_file_linked_from_outside_is_refused(elmo_copy, tmp_path):
    outside = tmp_path / "elsewhere.safetensors"
    shutil.move(elmo_copy / "model.safetensors", outside)
    (elmo_copy / "model.safetensors").symlink_to(outside)
    with pytest.raises(ModelDirError, match="outside"):
        load_bilm(elmo_copy)
    result = runner.invoke(app, ["write-manifest", str(elmo_copy)])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "is a link to" in result.stderr


@pytest.mark.timeout(60)
def test_links_inside_the_directory_and_a_linked_directory_load(elmo_copy, tmp_path):
    (elmo_copy / "weights").mkdir()
    shutil.move(elmo_copy / "model.safetensors", elmo_copy / "weights" / "model.safetensors")
    (elmo_copy / "model.safetensors").symlink_to("weights/model.safetensors")
    (tmp_path / "linked").symlink_to(elmo_copy)
    assert load_bilm(tmp_path / "linked").config.n_layers == 2
