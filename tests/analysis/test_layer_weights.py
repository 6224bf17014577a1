"""Reading the learned layer mixes back from a saved pipeline."""

import numpy as np
import pytest
import util as app_models

from spacy_contextual.analysis.layer_weights import layer_weights_figure, listener_mixes, load_pipeline
from spacy_contextual.analysis.occurrences import InputError


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("layer_weights")
    return app_models.tiny_listener_pipeline(app_models.tiny_elmo_dir(root / "elmo"), root / "pipeline")


def softmax(x):
    e = np.exp(np.asarray(x) - np.max(x))
    return e / e.sum()


def test_every_listener_mix_is_read_back_after_save_and_load(pipeline_dir):
    mixes = listener_mixes(load_pipeline(pipeline_dir))
    assert list(mixes["component"].unique()) == ["tagger", "textcat"]
    for component, (s, gamma) in (("tagger", app_models.TAGGER_MIX), ("textcat", app_models.TEXTCAT_MIX)):
        rows = mixes[mixes.component == component]
        assert list(rows["layer"]) == [0, 1, 2]
        np.testing.assert_allclose(rows["s"], s, rtol=1e-6)
        np.testing.assert_allclose(rows["weight"], softmax(s), rtol=1e-5)
        np.testing.assert_allclose(rows["gamma"], gamma, rtol=1e-6)
        assert (rows["source"] == "listener → elmo (elmo)").all()


def test_figure_has_components_side_by_side(pipeline_dir):
    fig = layer_weights_figure(listener_mixes(load_pipeline(pipeline_dir)))
    weights = [t for t in fig.data if t.xaxis == "x"]
    gammas = [t for t in fig.data if t.xaxis == "x2"]
    assert [t.name for t in weights] == ["tagger", "textcat"] and fig.layout.barmode == "group"
    assert list(weights[0].x) == ["layer 0", "layer 1", "layer 2"]
    np.testing.assert_allclose(weights[1].y, softmax(app_models.TEXTCAT_MIX[0]), rtol=1e-5)
    assert [t.y[0] for t in gammas] == pytest.approx([app_models.TAGGER_MIX[1], app_models.TEXTCAT_MIX[1]])


def test_pipeline_without_listeners_has_no_mixes(tmp_path):
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.to_disk(tmp_path / "plain")
    assert listener_mixes(load_pipeline(tmp_path / "plain")).empty
    with pytest.raises(ValueError, match="no listener components"):
        layer_weights_figure(listener_mixes(load_pipeline(tmp_path / "plain")))


def test_directories_that_are_not_pipelines_are_refused_clearly(tmp_path):
    with pytest.raises(InputError, match="not a directory"):
        load_pipeline(tmp_path / "missing")
    with pytest.raises(InputError, match="not a spaCy pipeline directory"):
        load_pipeline(tmp_path)
    (tmp_path / "config.cfg").write_text('[nlp]\nlang = "xx-nonexistent"\n')
    (tmp_path / "meta.json").write_text("{}")
    with pytest.raises(InputError, match="spaCy could not load"):
        load_pipeline(tmp_path)
