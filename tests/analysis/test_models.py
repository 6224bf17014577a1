"""Model loading by kind and name, for the dashboard and anything else above analysis/."""

import pytest

from spacy_contextual.analysis.attention import BUNDLED_DOMAIN
from spacy_contextual.analysis.model_loading import (
    ModelUnavailable,
    is_bundled,
    load_model,
    model_status,
    training_domain_of,
)


def test_models_load_by_name_and_fail_in_one_line(tiny_model_dir, tmp_path):
    embedder = load_model("elmo", str(tiny_model_dir))
    assert embedder.layer_labels[0] == "char-CNN"
    with pytest.raises(ModelUnavailable, match=r"Could not load an ELMo model from '.*nowhere'"):
        load_model("elmo", str(tmp_path / "nowhere"))
    rows = model_status({"elmo": str(tiny_model_dir), "cove": str(tmp_path / "nowhere")})
    assert rows[0] == {"encoder": "elmo", "model": str(tiny_model_dir), "status": "found"}
    assert rows[1]["status"].startswith(f"'{tmp_path / 'nowhere'}' is not a model name or folder")
    assert is_bundled("default") and is_bundled(" ") and not is_bundled(str(tiny_model_dir))


def test_the_training_domain_is_stated_or_said_to_be_unknown(tmp_path):
    assert training_domain_of("default") == BUNDLED_DOMAIN
    assert training_domain_of(str(tmp_path / "nowhere")).startswith("unknown")
    (tmp_path / "config.json").write_text('{"info": {"training_data": "news"}}')
    assert training_domain_of(str(tmp_path)) == "news"
