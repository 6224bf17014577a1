"""Listeners: per-component layer mixes, frozen vs fine-tuned biLM, replace_listeners, ElmoTok2Vec."""

from __future__ import annotations

import numpy as np
import pytest
import spacy
import torch
from spacy.training import Example
from thinc.api import SGD, Config, NumpyOps, fix_random_seed
from util import LISTENER_CONFIG, LISTENER_TRAIN, bilm_state, build_listener_pipeline, tiny_bilm, train_steps

from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.layers import layer_weights
from spacy_contextual.layers.layer_mix import LayerMix

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_bilm(tiny_bilm(), tmp_path_factory.mktemp("elmo") / "tiny")


def mix_of(nlp, component):
    return nlp.get_pipe(component).model.get_ref("tok2vec").get_ref("layer_mix")


def test_frozen_elmo_trains_only_the_mixes(model_dir):
    nlp, examples, optimizer = build_listener_pipeline(model_dir, frozen=True)
    elmo = nlp.get_pipe("elmo")
    assert elmo.listening_components == ["tagger", "textcat"]
    before = bilm_state(nlp)
    losses = train_steps(nlp, examples, optimizer, 20)
    after = bilm_state(nlp)
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert losses["elmo"] == 0.0
    tagger_mix, textcat_mix = layer_weights(mix_of(nlp, "tagger")), layer_weights(mix_of(nlp, "textcat"))
    assert tagger_mix["s"] != [0.0, 0.0, 0.0] and tagger_mix["gamma"] != 1.0  # learned
    assert tagger_mix["s"] != textcat_mix["s"]  # one mix per component
    assert abs(sum(tagger_mix["weights"]) - 1.0) < 1e-6
    doc = nlp("I like green eggs")
    assert [t.tag_ for t in doc] == ["PRON", "VERB", "ADJ", "NOUN"]


def sgd_steps(nlp, examples, steps=3):
    """Plain SGD without weight decay, so a weight moves only when a gradient reaches it. spaCy calls
    each component's finish_update right after its own update, before the listeners backpropagate
    (as for its Tok2Vec), so the biLM applies each step's gradient at the next step; the zero-initialised
    output layers pass no gradient back on the first step: the third step is the first to move it."""
    sgd, losses = SGD(0.1, L2=0.0, grad_clip=0.0), {}
    for _ in range(steps):
        nlp.update(examples, sgd=sgd, losses=losses)
    return losses


def test_unfrozen_elmo_is_fine_tuned(model_dir):
    nlp, examples, _ = build_listener_pipeline(model_dir, frozen=False)
    before = bilm_state(nlp)
    losses = sgd_steps(nlp, examples)
    after = bilm_state(nlp)
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert len(changed) == len(before)  # char CNN and both LSTM stacks moved
    assert losses["elmo"] > 0


def test_learn_rate_scale_scales_only_the_bilm_step(model_dir):
    def sgd_deltas(scale):
        nlp, examples, _ = build_listener_pipeline(model_dir, frozen=False, learn_rate_scale=scale)
        before, tagger_before = bilm_state(nlp), tagger_params(nlp)
        sgd_steps(nlp, examples)
        after, tagger_after = bilm_state(nlp), tagger_params(nlp)
        return {k: after[k] - before[k] for k in before}, [
            a - b for a, b in zip(tagger_after, tagger_before, strict=True)
        ]

    bilm_full, tagger_full = sgd_deltas(1.0)
    bilm_tenth, tagger_tenth = sgd_deltas(0.1)
    assert any(delta.abs().max() > 0 for delta in bilm_full.values())
    for name, delta in bilm_full.items():
        torch.testing.assert_close(
            bilm_tenth[name], 0.1 * delta, rtol=1e-3, atol=1e-6
        )  # float32 differences of weights
    assert all(
        np.allclose(a, b, atol=1e-7) for a, b in zip(tagger_full, tagger_tenth, strict=True)
    )  # the task layers: full step


@pytest.mark.parametrize("scale", [-1.0, 0.0])
def test_learn_rate_scale_that_is_not_positive_is_refused(model_dir, scale):
    with pytest.raises(ValueError, match="learn_rate_scale must be a number > 0"):
        build_listener_pipeline(model_dir, frozen=False, learn_rate_scale=scale)


def tagger_params(nlp):
    model = nlp.get_pipe("tagger").model
    return [node.get_param(name).copy() for node in model.walk() for name in node.param_names if node.has_param(name)]


def test_learned_mix_survives_save_and_load(model_dir, tmp_path):
    nlp, examples, optimizer = build_listener_pipeline(model_dir)
    train_steps(nlp, examples, optimizer, 5)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert layer_weights(mix_of(loaded, "tagger")) == layer_weights(mix_of(nlp, "tagger"))
    text = "They like blue soup"
    assert [t.tag_ for t in loaded(text)] == [t.tag_ for t in nlp(text)]
    assert loaded(text).cats == pytest.approx(nlp(text).cats, abs=1e-6)
    assert loaded.get_pipe("elmo").listening_components == ["tagger", "textcat"]


def test_listener_width_is_explicit_and_concatenates_multihash(model_dir):
    nlp, _, _ = build_listener_pipeline(model_dir)
    tok2vec = nlp.get_pipe("tagger").model.get_ref("tok2vec")
    assert tok2vec.get_dim("nO") == 24
    assert tok2vec.get_ref("listener").get_dim("nO") == 32  # the biLM's 2P
    assert any(node.name.startswith("multihashembed") or "hashembed" in node.name for node in tok2vec.walk())
    doc = nlp("I like green eggs")
    assert tok2vec.predict([doc])[0].shape == (4, 24)


def test_predict_reads_doc_data_and_errors_without_upstream(model_dir):
    nlp, examples, optimizer = build_listener_pipeline(model_dir)
    train_steps(nlp, examples, optimizer, 3)
    doc = nlp("I like green eggs")
    tagger = nlp.get_pipe("tagger")
    again = tagger(nlp.get_pipe("elmo")(nlp.make_doc("I like green eggs")))
    assert [t.tag_ for t in again] == [t.tag_ for t in doc]
    with nlp.select_pipes(disable=["elmo"]):
        with pytest.raises(ValueError, match="elmo_data is not set"):
            nlp("I like green eggs")


def test_listener_needs_all_layers(model_dir):
    nlp, _, _ = build_listener_pipeline(model_dir)
    nlp.get_pipe("elmo").cfg["store"] = "mixed"
    with pytest.raises(ValueError, match='store = "all"'):
        nlp("I like green eggs")


def test_replace_listeners_gives_a_private_encoder(model_dir, tmp_path):
    nlp, examples, optimizer = build_listener_pipeline(model_dir, pipeline=["elmo", "tagger"])
    train_steps(nlp, examples, optimizer, 5)
    expected = [t.tag_ for t in nlp("They like blue soup")]
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    config = nlp.get_pipe_config("tagger")["model"]["tok2vec"]
    assert config["@architectures"] == "spacy-contextual.ElmoTok2Vec.v1" and config["frozen"] is True
    assert config["encoder"]["@architectures"] == "spacy-contextual.ElmoEncoder.v3"
    assert nlp.get_pipe("elmo").listening_components == []
    nlp.remove_pipe("elmo")
    assert [t.tag_ for t in nlp("They like blue soup")] == expected
    before = bilm_state_of_tagger(nlp)
    train_steps(
        nlp, [Example.from_dict(nlp.make_doc(t), {"tags": g}) for t, g, _ in LISTENER_TRAIN], nlp.create_optimizer(), 2
    )
    after = bilm_state_of_tagger(nlp)
    assert all(torch.equal(before[k], after[k]) for k in before)  # still frozen
    nlp.to_disk(tmp_path / "replaced")
    assert [t.tag_ for t in spacy.load(tmp_path / "replaced")("They like blue soup")] == [
        t.tag_ for t in nlp("They like blue soup")
    ]


def bilm_state_of_tagger(nlp):
    encoder = next(node for node in nlp.get_pipe("tagger").model.walk() if node.name == "elmo_encoder")
    return {k: v.clone() for k, v in encoder.shims[0]._model.state_dict().items()}


def _tagger_only(model_dir, private: bool):
    config = Config().from_str(LISTENER_CONFIG, interpolate=False)
    config["paths"]["elmo_model"] = str(model_dir)
    config["nlp"]["pipeline"] = ["tagger"] if private else ["elmo", "tagger"]
    del config["components"]["textcat"]
    tok2vec = {"@architectures": "spacy-contextual.ElmoListener.v1", "width": 16}
    if private:
        del config["components"]["elmo"], config["initialize"]
        tok2vec = {
            "@architectures": "spacy-contextual.ElmoTok2Vec.v1",
            "width": 16,
            "encoder": {"@architectures": "spacy-contextual.ElmoEncoder.v1"},
            "loader": {"@misc": "spacy-contextual.ElmoModelDir.v1", "path": str(model_dir)},
        }
    config["components"]["tagger"]["model"]["tok2vec"] = tok2vec
    fix_random_seed(0)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": g}) for t, g, _ in LISTENER_TRAIN]
    optimizer = nlp.initialize(lambda: examples)
    optimizer.learn_rate = 0.01
    return nlp, examples, optimizer


def test_standalone_tok2vec_loads_its_own_weights_and_trains_like_the_listener(model_dir):
    shared, examples, optimizer = _tagger_only(model_dir, private=False)
    shared_losses = [train_steps(shared, examples, optimizer, 1)["tagger"] for _ in range(25)]
    private, examples, optimizer = _tagger_only(model_dir, private=True)
    before = bilm_state_of_tagger(private)
    private_losses = [train_steps(private, examples, optimizer, 1)["tagger"] for _ in range(25)]
    assert private_losses == pytest.approx(shared_losses, rel=1e-4)
    assert private_losses[-1] < 0.9 * private_losses[0]
    assert all(torch.equal(v, bilm_state_of_tagger(private)[k]) for k, v in before.items())  # frozen by default


@pytest.mark.parametrize("layer_norm", [False, True])
def test_layer_mix_gradients_match_finite_differences(layer_norm):
    ops = NumpyOps()
    rng = np.random.default_rng(0)
    mix = LayerMix(3, layer_norm=layer_norm)
    mix.initialize()
    mix.set_param("s", np.asarray([0.3, -0.2, 0.1], dtype="float32"))
    mix.set_param("gamma", np.asarray([1.3], dtype="float32"))
    X = [rng.normal(size=(3, n, 5)).astype("float32") for n in (4, 0, 2)]
    target = [rng.normal(size=(n, 5)).astype("float32") for n in (4, 0, 2)]

    def loss(params=None, inputs=X):
        Y, _ = mix(inputs, is_train=False)
        return float(sum(((y - t) ** 2).sum() / 2 for y, t in zip(Y, target, strict=True)))

    Y, backprop = mix(X, is_train=True)
    dX = backprop([y - t for y, t in zip(Y, target, strict=True)])
    eps = 1e-3
    for name in ("s", "gamma"):
        analytic = mix.get_grad(name).copy()
        param = mix.get_param(name)
        for i in range(param.size):
            orig = param[i]
            param[i] = orig + eps
            up = loss()
            param[i] = orig - eps
            down = loss()
            param[i] = orig
            assert analytic[i] == pytest.approx((up - down) / (2 * eps), rel=1e-2, abs=1e-3)
    for index in [(0, 1, 2), (2, 3, 4), (1, 0, 0)]:
        bumped = [x.copy() for x in X]
        bumped[0][index] += eps
        up = loss(inputs=bumped)
        bumped[0][index] -= 2 * eps
        down = loss(inputs=bumped)
        assert dX[0][index] == pytest.approx((up - down) / (2 * eps), rel=1e-2, abs=1e-3)
    assert ops.xp.asarray(dX[1]).shape == (3, 0, 5)


def test_listener_without_projection_must_match_the_encoder_width(model_dir):
    config = Config().from_str(LISTENER_CONFIG, interpolate=False)
    config["paths"]["elmo_model"] = str(model_dir)
    config["nlp"]["pipeline"] = ["elmo", "tagger"]
    del config["components"]["textcat"]
    for width, ok in ((32, True), (24, False)):
        config["components"]["tagger"]["model"]["tok2vec"] = {
            "@architectures": "spacy-contextual.ElmoListener.v1", "width": width, "project": False,
        }  # fmt: skip
        nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
        examples = [Example.from_dict(nlp.make_doc(t), {"tags": g}) for t, g, _ in LISTENER_TRAIN]
        if ok:
            nlp.initialize(lambda examples=examples: examples)
            assert nlp.get_pipe("tagger").model.get_ref("tok2vec").predict([nlp("I like eggs")])[0].shape == (3, 32)
        else:
            with pytest.raises(ValueError, match="project = true"):
                nlp.initialize(lambda examples=examples: examples)


def test_replaced_listener_keeps_fine_tuning_when_unfrozen(model_dir):
    nlp, examples, optimizer = build_listener_pipeline(model_dir, frozen=False, pipeline=["elmo", "tagger"])
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    assert nlp.get_pipe_config("tagger")["model"]["tok2vec"]["frozen"] is False
    nlp.remove_pipe("elmo")
    before = bilm_state_of_tagger(nlp)
    train_steps(nlp, [Example.from_dict(nlp.make_doc(t), {"tags": g}) for t, g, _ in LISTENER_TRAIN], optimizer, 2)
    after = bilm_state_of_tagger(nlp)
    assert all(not torch.equal(before[k], after[k]) for k in before)


def test_frozen_components_need_annotating_components(model_dir):
    nlp, examples, optimizer = build_listener_pipeline(model_dir, pipeline=["elmo", "tagger"])
    with pytest.raises(ValueError, match="annotating_components"):
        nlp.update(examples, sgd=optimizer, exclude=["elmo"])
    losses = nlp.update(examples, sgd=optimizer, exclude=["elmo"], annotates=["elmo"])
    assert losses["tagger"] > 0 and "elmo" not in losses
