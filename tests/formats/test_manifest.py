"""Model directories' manifest.json: a flipped, truncated or missing file is refused naming it; a
directory without a manifest names the command that writes one; the bundled manifests match."""

from __future__ import annotations

import json

import pytest
from util import KINDS, SENTENCES, bundled_copy, cli, flip_middle

from spacy_contextual.embedders import load_encoder
from spacy_contextual.errors import ContextualError, ModelDirError
from spacy_contextual.formats.bundled import bundled_model_dir

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
