"""A saved ``elmo`` / ``cove`` component carries the manifest of its files; ``spacy.load`` refuses an
altered, truncated or unlisted file, naming it (``pipeline/component_manifest.py``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import spacy
from util import tiny_elmo_dir, tiny_listener_pipeline

from spacy_contextual.errors import ContextualError, ModelDirError


@pytest.fixture
def saved(tmp_path):
    return tiny_listener_pipeline(tiny_elmo_dir(tmp_path / "elmo_model"), tmp_path / "pipeline")


def test_to_disk_writes_the_manifest_and_load_checks_it(saved):
    manifest = json.loads((saved / "elmo" / "manifest.json").read_text())
    assert sorted(manifest["files"]) == ["cfg", "model"]
    nlp = spacy.load(saved)
    assert nlp("the dog runs")._.elmo_data.n_tokens == 3


def flip_a_weight_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # the file is mostly the encoder's weights
    path.write_bytes(bytes(data))


@pytest.mark.timeout(60)
def test_altered_weights_are_refused_naming_the_file(saved):
    flip_a_weight_byte(saved / "elmo" / "model")
    with pytest.raises(ModelDirError, match=r"pipeline/elmo/model does not match its SHA-256 in manifest.json"):
        spacy.load(saved)


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_truncated_file_is_one_clear_error_naming_it(saved):
    model = saved / "elmo" / "model"
    size = model.stat().st_size
    model.write_bytes(model.read_bytes()[: size // 2])
    with pytest.raises(ModelDirError, match=rf"pipeline/elmo/model has {size // 2:,} bytes but manifest.json records"):
        spacy.load(saved)
    result = subprocess.run(
        [sys.executable, "-c", f"import spacy; spacy.load({str(saved)!r})"], capture_output=True, text=True
    )
    assert result.returncode != 0 and result.stderr.strip().splitlines()[-1].startswith(
        "spacy_contextual.errors.ModelDirError: "
    )


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_altered_settings_and_a_missing_manifest_are_refused(saved):
    cfg = saved / "elmo" / "cfg"
    settings = json.loads(cfg.read_text())
    cfg.write_text(json.dumps({**settings, "store": "mixed"}))
    with pytest.raises(ModelDirError, match=r"pipeline/elmo/cfg has \d+ bytes but manifest.json records \d+"):
        spacy.load(saved)
    (saved / "elmo" / "manifest.json").unlink()
    with pytest.raises(ModelDirError, match=r"pipeline/elmo has no manifest.json .*save the pipeline again") as error:
        spacy.load(saved)
    fix = str(error.value).split("record them with: ")[1]
    subprocess.run(fix, shell=True, check=True)  # the command the message gives, as the user would run it
    assert spacy.load(saved).get_pipe("elmo").cfg["store"] == "mixed"
    cfg.write_text(json.dumps({**settings, "vector_layer": 9}))  # a damaged setting, with its manifest rewritten
    subprocess.run(fix, shell=True, check=True)
    with pytest.raises(ContextualError, match=r"^vector_layer must be null .* \[-3, 2\] for this 3-layer model, got 9"):
        spacy.load(saved)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_bundled_model_pipeline_round_trip_and_tampering(kind, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe(kind)
    nlp.initialize()
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded("A man rides a horse .")._.get(f"{kind}_data") == nlp("A man rides a horse .")._.get(f"{kind}_data")
    flip_a_weight_byte(tmp_path / "pipeline" / kind / "model")
    with pytest.raises(ModelDirError, match=rf"pipeline/{kind}/model does not match its SHA-256"):
        spacy.load(tmp_path / "pipeline")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind, section, key", [("elmo", "bilm", "n_layers"), ("cove", "encoder", "num_layers")])
def test_a_stored_config_larger_than_its_weights_is_refused_before_allocating(kind, section, key, tmp_path):
    """A pipeline whose stored encoder config was enlarged (manifest re-signed, as an attacker would)."""
    import srsly

    from spacy_contextual.pipeline.component_manifest import write_component_manifest

    nlp = spacy.blank("en")
    nlp.add_pipe(kind)
    nlp.initialize()
    nlp.to_disk(tmp_path / "pipeline")
    model = tmp_path / "pipeline" / kind / "model"
    stored = srsly.msgpack_loads(model.read_bytes())  # thinc's model message; the encoder shim's inside
    shim = srsly.msgpack_loads(stored["shims"][0][0])
    shim["config"][section][key] = 64
    stored["shims"][0][0] = srsly.msgpack_dumps(shim)
    model.write_bytes(srsly.msgpack_dumps(stored))
    write_component_manifest(tmp_path / "pipeline" / kind)
    with pytest.raises(ModelDirError, match="describes a model larger than its weights"):
        spacy.load(tmp_path / "pipeline")
