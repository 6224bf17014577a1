"""The encoder shims follow thinc's ``to_cpu`` / ``to_gpu``: before the weights are loaded too (they
then go there when they come), and a stateful biLM takes its carried LSTM state along."""

import numpy as np
import pytest
import spacy
import torch
from util import tiny_bilm, tiny_cove_dir

from spacy_contextual.formats.bilm_dir import save_bilm
from spacy_contextual.layers import cove_model_dir_loader, elmo_model_dir_loader

HAS_CUDA = torch.cuda.is_available()


@pytest.fixture(scope="module")
def elmo_dir(tmp_path_factory):
    return save_bilm(tiny_bilm(), tmp_path_factory.mktemp("elmo") / "tiny")


def encoder(nlp, name):
    return nlp.get_pipe(name).model


@pytest.mark.parametrize("kind", ["elmo", "cove"])
def test_to_device_before_the_weights_are_loaded(elmo_dir, tmp_path, kind):
    nlp = spacy.blank("en")
    nlp.add_pipe(kind)
    encoder(nlp, kind).to_cpu()  # thinc's Model.to_cpu reaches the shim before initialize
    loader = (
        elmo_model_dir_loader(str(elmo_dir)) if kind == "elmo" else cove_model_dir_loader(str(tiny_cove_dir(tmp_path)))
    )
    nlp.get_pipe(kind).initialize(loader=loader)
    assert encoder(nlp, kind).shims[0].device == torch.device("cpu")
    assert nlp("a man rides")._.get(f"{kind}_data").layers.shape[1] == 3


def stateful_elmo(elmo_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": {"stateful": True}})
    nlp.get_pipe("elmo").initialize(loader=elmo_model_dir_loader(str(elmo_dir)))
    return nlp


def test_stateful_state_survives_a_move(elmo_dir):
    moved, kept, fresh = stateful_elmo(elmo_dir), stateful_elmo(elmo_dir), stateful_elmo(elmo_dir)
    for nlp in (moved, kept):
        nlp("The bank raised its rates .")
    encoder(moved, "elmo").to_cpu()
    assert encoder(moved, "elmo").shims[0].module.states is not None
    after_move, continued, from_zero = (nlp("We sat by the bank .")._.elmo_data.layers for nlp in (moved, kept, fresh))
    np.testing.assert_allclose(after_move, continued, atol=1e-6, rtol=0)
    assert not np.allclose(after_move, from_zero, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_to_gpu_moves_weights_state_and_grad_scaler(elmo_dir):
    nlp = stateful_elmo(elmo_dir)
    shim = nlp.get_pipe("elmo").model.shims[0]
    shim.precision, shim._mixed_precision = "fp16", True  # as precision = "fp16" builds it
    nlp("The bank raised its rates .")
    encoder(nlp, "elmo").to_gpu(0)
    shim = encoder(nlp, "elmo").shims[0]
    assert shim.device == torch.device("cuda", 0)
    assert all(state.device == shim.device for state in shim.module.states)
    assert shim._grad_scaler._scale.device == shim.device
    encoder(nlp, "elmo").to_cpu()
    assert all(state.device.type == "cpu" for state in shim.module.states)
