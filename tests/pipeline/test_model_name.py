"""A model named at ``add_pipe`` time (``config={"model": {"name": ...}}``, ``ElmoEncoder.v3`` /
``CoveEncoder.v3``): "default", a folder, or a catalog name served on loopback; recorded in the config,
saved with the weights, loaded offline; a bad name is one line naming the setting."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import spacy
from model_server import model_dir_entry, write_catalog
from util import KINDS, tiny_bilm, tiny_cove_dir

from spacy_contextual.embedders import load_encoder
from spacy_contextual.errors import ContextualError
from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.hub.cache import OFFLINE_ENV
from spacy_contextual.hub.catalog import CATALOG_ENV
from spacy_contextual.layers import elmo_model_dir_loader

pytestmark = pytest.mark.timeout(180)
WORDS = ["The", "bank", "raised", "its", "rates", "."]


def tiny_dir(kind: str, path):
    return save_bilm(tiny_bilm(), path) if kind == "elmo" else tiny_cove_dir(path)


def named_pipeline(kind: str, name: str) -> spacy.Language:
    nlp = spacy.blank("en")
    nlp.add_pipe(kind, config={"model": {"name": name}})
    nlp.initialize()
    return nlp


def layers(nlp, kind: str) -> np.ndarray:
    return getattr(nlp(" ".join(WORDS))._, f"{kind}_data").layers


def expected(kind: str, name_or_path) -> np.ndarray:
    return load_encoder(kind, str(name_or_path)).embed_sentences([WORDS])[0]


@pytest.mark.parametrize("kind", KINDS)
def test_default_is_the_bundled_model_and_is_recorded(kind, one_thread):
    nlp = named_pipeline(kind, "default")
    assert nlp.config["components"][kind]["model"]["name"] == "default"
    assert nlp.config["components"][kind]["model"]["@architectures"].endswith("Encoder.v3")
    np.testing.assert_allclose(layers(nlp, kind), expected(kind, "default"), atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_a_folder_by_name_sizes_from_its_config(kind, tmp_path, one_thread):
    folder = tiny_dir(kind, tmp_path / "tiny")
    nlp = named_pipeline(kind, str(folder))
    assert nlp.config["components"][kind]["model"]["name"] == str(folder)
    encoder = nlp.get_pipe(kind).model
    assert (encoder.get_dim("nL"), encoder.get_dim("nO")) == ((3, 32) if kind == "elmo" else (3, 12))
    np.testing.assert_allclose(layers(nlp, kind), expected(kind, folder), atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_a_catalog_name_is_fetched_saved_and_loaded_offline(kind, tmp_path, home, server, monkeypatch, one_thread):
    folder = tiny_dir(kind, tmp_path / "served")
    catalog = write_catalog(tmp_path / "catalog.json", {"ours": model_dir_entry(server, kind, folder, "ours")})
    monkeypatch.setenv(CATALOG_ENV, str(catalog))
    nlp = named_pipeline(kind, "ours")
    assert server.requests[f"ours/{next(folder.glob('*.safetensors')).name}"] == 1
    before = layers(nlp, kind)
    np.testing.assert_allclose(before, expected(kind, folder), atol=1e-5)
    nlp.to_disk(tmp_path / "pipeline")
    assert 'name = "ours"' in (tmp_path / "pipeline" / "config.cfg").read_text(encoding="utf-8")

    shutil.rmtree(home)  # offline, no cache, no catalog: the weights come from the saved pipeline
    monkeypatch.setenv(OFFLINE_ENV, "1")
    monkeypatch.setenv(CATALOG_ENV, "")
    loaded = spacy.load(tmp_path / "pipeline")
    np.testing.assert_array_equal(layers(loaded, kind), before)
    assert loaded.config["components"][kind]["model"]["name"] == "ours"


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_name_is_one_line_naming_the_setting(kind, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe(kind, config={"model": {"name": str(tmp_path / "no-such-model")}})
    with pytest.raises(FileNotFoundError) as error:
        nlp.initialize()
    message = str(error.value)
    assert message.startswith("model.name = ") and "no-such-model" in message and "\n" not in message
    assert "spacy-contextual models" in message and "'default'" in message


def test_a_name_that_is_not_a_string_is_refused_when_built():
    from spacy_contextual.layers.elmo_encoder import elmo_encoder_v3

    with pytest.raises(ContextualError, match="^name must be a model name from `spacy-contextual models`"):
        elmo_encoder_v3(name=3)


def test_a_loader_block_still_takes_precedence_over_the_name(tmp_path, one_thread):
    folder = tiny_dir("elmo", tmp_path / "tiny")
    config = spacy.blank("en").config
    config["nlp"]["pipeline"] = ["elmo"]
    config["components"]["elmo"] = {"factory": "elmo", "model": {"name": "default"}}
    config["initialize"]["components"] = {
        "elmo": {"loader": {"@misc": "spacy-contextual.ElmoModelDir.v1", "path": str(folder)}}
    }
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    nlp.initialize()
    np.testing.assert_allclose(layers(nlp, "elmo"), expected("elmo", folder), atol=1e-5)
    python_route = named_pipeline("elmo", "default")
    python_route.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(str(folder)))
    np.testing.assert_allclose(layers(python_route, "elmo"), expected("elmo", folder), atol=1e-5)
