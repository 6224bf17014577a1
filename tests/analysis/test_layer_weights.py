"""Reading the learned layer mixes back from a saved pipeline."""

import numpy as np
import pandas as pd
import pytest
import util as app_models

from spacy_contextual.analysis.layer_weights import (
    MIX_COLUMNS,
    encoder_layer_label,
    example_mixes,
    layer_weights_figure,
    listener_mixes,
    load_pipeline,
    read_mixes_json,
    write_mixes_json,
)
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
        assert list(rows["layer"]) == [0, 1, 2] and list(rows["label"]) == ["char-CNN", "LSTM-1", "LSTM-2"]
        np.testing.assert_allclose(rows["s"], s, rtol=1e-6)
        np.testing.assert_allclose(rows["weight"], softmax(s), rtol=1e-5)
        np.testing.assert_allclose(rows["gamma"], gamma, rtol=1e-6)
        assert (rows["source"] == "listener → elmo (elmo)").all()


def test_figure_has_components_side_by_side(pipeline_dir):
    fig = layer_weights_figure(listener_mixes(load_pipeline(pipeline_dir)))
    weights = [t for t in fig.data if t.xaxis == "x"]
    gammas = [t for t in fig.data if t.xaxis == "x2"]
    assert [t.name for t in weights] == ["tagger", "textcat"] and fig.layout.barmode == "group"
    assert list(weights[0].x) == ["char-CNN", "LSTM-1", "LSTM-2"] and fig.layout.xaxis.tickangle == 0
    assert [shape.y0 for shape in fig.layout.shapes] == pytest.approx([1 / 3])  # the uniform mix
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


def test_elmo_and_cove_mixes_get_their_own_panels_and_names():
    rows = []
    for component, kind, layers in (("tagger", "elmo", [0, 1, 2]), ("textcat", "cove", [1, 2])):
        for layer in layers:
            label = encoder_layer_label(kind, layer)
            rows.append((component, "listener", kind, layer, label, 0.0, 1 / len(layers), 1.0))
    mixes = pd.DataFrame(rows, columns=MIX_COLUMNS)
    fig = layer_weights_figure(mixes)
    assert [a.text for a in fig.layout.annotations if a.text.startswith("softmax")] == [
        "softmax(s_j): elmo",
        "softmax(s_j): cove",
    ]
    assert list(fig.data[1].x) == ["CoVe-1", "CoVe-2"]  # combine = "concat": GloVe is not mixed
    assert sorted(shape.y0 for shape in fig.layout.shapes) == pytest.approx([1 / 3, 1 / 2])
    assert encoder_layer_label("cove", 0) == "GloVe" and encoder_layer_label("other", 4) == "layer 4"


def test_the_shipped_example_is_a_written_mixes_file(pipeline_dir, tmp_path):
    mixes, document = example_mixes()
    assert set(mixes["component"]) == {"tagger", "morphologizer"} and set(mixes["label"]) == {
        "char-CNN",
        "LSTM-1",
        "LSTM-2",
    }
    for _, group in mixes.groupby("component"):
        assert group["weight"].sum() == pytest.approx(1.0, abs=1e-5)
    about = document["about"]
    assert "python -m spacy train configs/elmo_tagger.cfg" in about["command"] and about["best_step"] == 3200
    assert {"tag_acc", "pos_acc"} <= set(document["scores"])
    written = write_mixes_json(pipeline_dir, tmp_path / "mixes.json", {"command": "spacy train x"})
    again, rest = read_mixes_json(tmp_path / "mixes.json")
    pd.testing.assert_frame_equal(again, listener_mixes(load_pipeline(pipeline_dir)))
    assert rest["about"] == {"command": "spacy train x"} and len(written["mixes"]) == 6


def test_a_cove_pipeline_names_the_mixed_layers(tmp_path):
    """The shipped CoVe tagger config concatenates GloVe and mixes CoVe-1 and CoVe-2 only."""
    import spacy
    from spacy.training import Example
    from thinc.api import Config

    config = Config().from_disk(app_models.REPO / "configs" / "cove_tagger.cfg", interpolate=False)
    config["paths"]["cove_model"] = str(app_models.tiny_cove_dir(tmp_path / "cove"))
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    words = ["the", "man", "eat", "blue", "ham"]
    doc = spacy.tokens.Doc(nlp.vocab, words=words)
    example = Example.from_dict(
        doc, {"tags": ["DT", "NN", "VB", "JJ", "NN"], "pos": ["DET", "NOUN", "VERB", "ADJ", "NOUN"]}
    )
    nlp.initialize(lambda: [example])
    mixes = listener_mixes(nlp)
    assert set(mixes["encoder"]) == {"cove"} and set(mixes["component"]) == {"tagger", "morphologizer"}
    for _, group in mixes.groupby("component"):
        assert list(group["layer"]) == [1, 2] and list(group["label"]) == ["CoVe-1", "CoVe-2"]
    assert list(layer_weights_figure(mixes).data[0].x) == ["CoVe-1", "CoVe-2"]
