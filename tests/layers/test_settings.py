"""Every setting of the ``elmo`` / ``cove`` components, their encoder architectures and the listener
architectures is checked when the component is built (``vector_layer``'s range when the weights are
loaded): one line naming the setting, its allowed values and the value given."""

from __future__ import annotations

import pytest
import spacy

from spacy_contextual.errors import ContextualError
from spacy_contextual.layers import elmo_listener_v1

ENCODERS = {"elmo": "spacy-contextual.ElmoEncoder.v1", "cove": "spacy-contextual.CoveEncoder.v1"}
LISTENERS = {"elmo": "spacy-contextual.ElmoListener.v1", "cove": "spacy-contextual.CoveListener.v1"}

COMPONENT_SETTINGS = [
    ("store", "everything", 'store must be one of "all", "mixed", "none", got \'everything\''),
    ("learn_rate_scale", 0.0, r"learn_rate_scale must be a number > 0 \(it multiplies"),
    ("learn_rate_scale", -0.5, r"learn_rate_scale must be a number > 0"),
]
ENCODER_SETTINGS = [
    ("window", 0, r"window must be an integer >= 1 \(the longest segment"),
    ("window", -3, r"window must be an integer >= 1"),
    ("max_batch_tokens", -1, r"max_batch_tokens must be an integer >= 130 \(padded tokens per batch"),
    ("max_batch_tokens", 100, r"max_batch_tokens must be an integer >= 130"),
    ("segment_cache_mb", -1, r"segment_cache_mb must be an integer >= 0 \(MiB of cached segments; 0 = no cache\)"),
]
LISTENER_SETTINGS = [
    ("width", 0, r"width must be an integer >= 1"),
    ("dropout", 1.0, r"dropout must be a number in \[0, 1\), got 1.0"),
    ("layer_dropout", -0.1, r"layer_dropout must be a number in \[0, 1\), got -0.1"),
]


def add(kind, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe(kind, config=config)
    return nlp


@pytest.mark.parametrize("kind", ["elmo", "cove"])
@pytest.mark.parametrize(("name", "value", "message"), COMPONENT_SETTINGS)
def test_component_settings_are_checked_when_built(kind, name, value, message):
    with pytest.raises(ContextualError, match=f"^{message}"):
        add(kind, **{name: value})


@pytest.mark.parametrize("kind", ["elmo", "cove"])
@pytest.mark.parametrize(("name", "value", "message"), ENCODER_SETTINGS)
def test_encoder_settings_are_checked_when_built(kind, name, value, message):
    with pytest.raises(ContextualError, match=f"^{message}"):
        add(kind, model={"@architectures": ENCODERS[kind], name: value})


def test_elmo_only_encoder_settings():
    with pytest.raises(ContextualError, match=r"^token_cache_size must be an integer >= 0 \(word types"):
        add("elmo", model={"@architectures": ENCODERS["elmo"], "token_cache_size": -5})


@pytest.mark.parametrize("kind", ["elmo", "cove"])
@pytest.mark.parametrize(("name", "value", "message"), LISTENER_SETTINGS)
def test_listener_settings_are_checked_when_built(kind, name, value, message):
    nlp = spacy.blank("en")
    tok2vec = {"@architectures": LISTENERS[kind], "width": 8, name: value}
    with pytest.raises(ContextualError, match=f"^{message}"):
        nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": tok2vec}})


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_grad_factor_must_be_finite(value):  # not in a JSON config: the architecture called in Python
    with pytest.raises(ContextualError, match=r"^grad_factor must be a finite number \(scales the gradient"):
        elmo_listener_v1(width=8, grad_factor=value)


def test_cove_combine_is_checked():
    nlp = spacy.blank("en")
    tok2vec = {"@architectures": LISTENERS["cove"], "width": 8, "combine": "sum"}
    with pytest.raises(ContextualError, match=r'^combine must be one of "concat", "mix", got \'sum\''):
        nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": tok2vec}})


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("kind", "n_layers"), [("elmo", 3), ("cove", 3)])
def test_vector_layer_is_checked_against_the_bundled_models_layers(kind, n_layers):
    nlp = add(kind, vector_layer=7)
    allowed = rf"in \[-{n_layers}, {n_layers - 1}\] for this {n_layers}-layer model"
    message = f"^vector_layer must be null .* {allowed}, got 7$"
    with pytest.raises(ContextualError, match=message):
        nlp.initialize()
    add(kind, vector_layer=-n_layers).initialize()  # the first layer, counted from the end
