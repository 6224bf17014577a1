"""Model directories' manifest.json: a flipped, truncated or missing file is refused naming it; a
directory without a manifest names the command that writes one; the bundled manifests match.

Manifest names stay inside the model directory: no ``..``, no absolute path, no symlink out of it
(bundled ELMo copies); links inside the directory still work."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner
from util import KINDS, SENTENCES, bundled_copy, cli, flip_middle

from spacy_contextual.cli import app
from spacy_contextual.embedders import load_encoder
from spacy_contextual.errors import ContextualError, ModelDirError
from spacy_contextual.formats.bilm_dir import load_bilm
from spacy_contextual.formats.manifest import MANIFEST_NAME
from spacy_contextual.hub.resolver import bundled_model_dir
from spacy_contextual.integrity import ALGORITHM, file_digest

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


BUNDLED_FILES = [
    ("elmo", "model.safetensors"),
    ("elmo", "vocab.txt"),
    ("elmo", "config.json"),
    ("cove", "model-00002-of-00003.safetensors"),
    ("cove", "target_vocab.txt"),
    ("cove", "config.json"),
]


@pytest.mark.parametrize("kind, name", BUNDLED_FILES)
def test_a_flipped_byte_anywhere_is_refused_naming_the_file(kind, name, tmp_path):
    model = bundled_copy(kind, tmp_path)
    flip_middle(model / name, 64 if name.endswith(".safetensors") else 1)
    with pytest.raises(ModelDirError, match=rf"{name}.*(SHA-256|not valid JSON)"):
        load_encoder(kind, model)


def test_a_truncated_or_missing_weight_file_is_refused(tmp_path):
    model = bundled_copy("cove", tmp_path)
    shard = model / "model-00003-of-00003.safetensors"
    shard.write_bytes(shard.read_bytes()[:1000])
    with pytest.raises(ModelDirError, match=r"model-00003-of-00003.safetensors has 1,000 bytes"):
        load_encoder("cove", model)
    shard.unlink()
    with pytest.raises(ContextualError, match="model-00003-of-00003.safetensors is missing"):
        load_encoder("cove", model)


def test_a_directory_without_manifest_names_the_command_that_writes_one(tmp_path):
    model = bundled_copy("elmo", tmp_path)
    (model / "manifest.json").unlink()
    with pytest.raises(ModelDirError, match="no manifest.json.*spacy-contextual write-manifest"):
        load_encoder("elmo", model)
    result = cli("write-manifest", model)
    assert result.exit_code == 0, result.output
    assert load_encoder("elmo", model).embed_sentences(SENTENCES)[0].shape == (3, 6, 256)


def test_the_bundled_manifests_match_and_record_the_weights_as_shipped():
    for kind in KINDS:
        manifest = json.loads((bundled_model_dir(kind) / "manifest.json").read_text())
        assert "config.json" in manifest["files"] and any(n.endswith(".safetensors") for n in manifest["files"])


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
