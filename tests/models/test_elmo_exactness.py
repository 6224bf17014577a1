"""Outputs equal the AllenNLP 2.10.1 and TensorFlow references in ../shared/elmo_fixtures (1e-5)."""

import json

import h5py
import numpy as np
import pytest
import torch
from util import FIXTURES

from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.formats.bilm_tf import bilm_tf_datasets, load_bilm_tf
from spacy_contextual.models.chars import batch_to_ids, remove_sentence_boundaries
from spacy_contextual.models.elmo import Elmo
from spacy_contextual.models.scalar_mix import ScalarMix
from spacy_contextual.models.token_cache import TokenVectorCache

TOL = dict(atol=1e-5, rtol=1e-5)


@pytest.fixture(scope="module")
def anchor_bilm(tiny_anchor):
    root, _, _ = tiny_anchor
    return load_bilm_tf(root / "options.json", root / "weights.hdf5").eval()


def test_stateless_activations(anchor_bilm, tiny_anchor):
    _, meta, ref = tiny_anchor
    for k, batch in enumerate(meta["batches"]):
        with torch.no_grad():
            activations, mask = anchor_bilm(batch_to_ids(batch))
        assert np.array_equal(mask.numpy(), ref[f"stateless/b{k}/mask_bos_eos"])
        for j, layer in enumerate(activations):
            np.testing.assert_allclose(layer.numpy(), ref[f"stateless/b{k}/act{j}"], **TOL)
        stacked = torch.stack([remove_sentence_boundaries(a, mask)[0] for a in activations], 1)
        np.testing.assert_allclose(stacked.numpy(), ref[f"stateless/b{k}/embedder_acts"], **TOL)


def test_stateful_activations_and_carried_states(tiny_anchor):
    root, meta, ref = tiny_anchor
    bilm = load_bilm_tf(root / "options.json", root / "weights.hdf5", stateful=True).eval()
    for k, batch in enumerate(meta["batches"]):
        with torch.no_grad():
            activations, _ = bilm(batch_to_ids(batch))
        for j, layer in enumerate(activations):
            np.testing.assert_allclose(layer.numpy(), ref[f"stateful/b{k}/act{j}"], **TOL)
        np.testing.assert_allclose(bilm.states[0].numpy(), ref[f"stateful/b{k}/state_h"], **TOL)
        np.testing.assert_allclose(bilm.states[1].numpy(), ref[f"stateful/b{k}/state_c"], **TOL)
    # b4 repeats b0: stateful differs, and after reset_states it equals the stateless run again
    bilm.reset_states()
    with torch.no_grad():
        again = bilm(batch_to_ids(meta["batches"][0])).activations[2]
    np.testing.assert_allclose(again.numpy(), ref["stateless/b0/act2"], **TOL)


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_scalar_mix_with_and_without_layer_norm(anchor_bilm, tiny_anchor, index):
    _, meta, ref = tiny_anchor
    setting = meta["mix_index"][index]
    mix = ScalarMix(
        3, do_layer_norm=setting["do_layer_norm"], initial_weights=setting["weights"], initial_gamma=setting["gamma"]
    )
    for k, batch in enumerate(meta["batches"]):
        with torch.no_grad():
            activations, mask = anchor_bilm(batch_to_ids(batch))
            mixed = mix(activations, mask)
        np.testing.assert_allclose(mixed.numpy(), ref[f"stateless/b{k}/mix{index}_bos_eos"], **TOL)
        np.testing.assert_allclose(
            remove_sentence_boundaries(mixed, mask)[0].numpy(), ref[f"stateless/b{k}/mix{index}"], **TOL
        )


def test_elmo_representations(anchor_bilm, tiny_anchor):
    _, meta, ref = tiny_anchor
    elmo = Elmo(anchor_bilm, num_output_representations=2, dropout=0.0).eval()
    for mix, (weights, gamma) in zip(elmo.scalar_mixes, meta["mix_settings"], strict=True):
        with torch.no_grad():
            mix.weights.copy_(torch.tensor(weights))
            mix.gamma.fill_(gamma)
    keep = Elmo(anchor_bilm, 1, do_layer_norm=True, dropout=0.0, keep_sentence_boundaries=True).eval()
    with torch.no_grad():
        keep.scalar_mixes[0].weights.copy_(torch.tensor(meta["mix_settings"][0][0]))
        keep.scalar_mixes[0].gamma.fill_(meta["mix_settings"][0][1])
    for k, batch in enumerate(meta["batches"]):
        with torch.no_grad():
            out = elmo(batch_to_ids(batch))
            kept = keep(batch_to_ids(batch))
        assert np.array_equal(out["mask"].numpy(), ref[f"elmo/b{k}/mask"])
        for r in range(2):
            np.testing.assert_allclose(out["elmo_representations"][r].numpy(), ref[f"elmo/b{k}/rep{r}"], **TOL)
        assert np.array_equal(kept["mask"].numpy(), ref[f"elmo_ln_keep_bounds/b{k}/mask"])
        np.testing.assert_allclose(
            kept["elmo_representations"][0].numpy(), ref[f"elmo_ln_keep_bounds/b{k}/rep0"], **TOL
        )


def test_vocabulary_cache_path(tiny_anchor):
    """AllenNLP's ``vocab_to_cache`` path (a precomputed token table) is what the token cache gives."""
    root, meta, ref = tiny_anchor
    bilm = load_bilm_tf(root / "options.json", root / "weights.hdf5").eval()
    vocab = [str(w) for w in ref["cache/vocab"]]
    cache = TokenVectorCache()
    with torch.no_grad():
        table, _ = cache.token_vectors(bilm.token_encoder, [vocab[1:]], boundaries=False)
    np.testing.assert_allclose(table[0].numpy(), ref["cache/word_embedding"][1:], **TOL)  # row 0: padding
    for k, _batch in enumerate(meta["batches"]):
        word_ids = ref[f"cache/b{k}/word_ids"]
        sentences = [[vocab[i] for i in row if i > 0] for row in word_ids]
        with torch.no_grad():
            activations, mask = bilm.encode_sentences(sentences, cache)
        assert np.array_equal(mask.numpy(), ref[f"cache/b{k}/mask_bos_eos"])
        for j, layer in enumerate(activations):
            np.testing.assert_allclose(layer.numpy(), ref[f"cache/b{k}/act{j}"], **TOL)


def test_fine_tuning_gradients(tiny_anchor):
    """Elmo(requires_grad=True): d sum(rep0 * R) / d weights equals AllenNLP's, in the HDF5 layout."""
    root, meta, ref = tiny_anchor
    bilm = load_bilm_tf(root / "options.json", root / "weights.hdf5")
    elmo = Elmo(bilm, 1, dropout=0.0, requires_grad=True)
    weights, gamma = meta["mix_settings"][0]
    with torch.no_grad():
        elmo.scalar_mixes[0].weights.copy_(torch.tensor(weights))
        elmo.scalar_mixes[0].gamma.fill_(gamma)
    rep = elmo(batch_to_ids(meta["batches"][0]))["elmo_representations"][0]
    loss = (rep * torch.from_numpy(ref["grad/R"])).sum()
    np.testing.assert_allclose(loss.item(), ref["grad/loss"], rtol=1e-5)
    loss.backward()
    with torch.no_grad():
        for param in bilm.parameters():
            param.copy_(param.grad)
    grads = bilm_tf_datasets(bilm)
    for name in ref.files:
        if name.startswith("grad/") and name[5:] in grads:
            np.testing.assert_allclose(grads[name[5:]], ref[name], atol=1e-5, rtol=1e-4, err_msg=name)
    np.testing.assert_allclose(elmo.scalar_mixes[0].weights.grad.numpy(), ref["grad/scalar_mix_weights"], **TOL)
    np.testing.assert_allclose(elmo.scalar_mixes[0].gamma.grad.numpy(), ref["grad/scalar_mix_gamma"], **TOL)


def _golden_sentences(fixture_dir):
    name = "sentences.json" if (fixture_dir / "sentences.json").exists() else "lm_embeddings_sentences.json"
    return json.loads((fixture_dir / name).read_text())


@pytest.mark.parametrize("fixture", ["tf_golden_allennlp_skip", "tf_golden_bilmtf_noskip"])
def test_tensorflow_golden_top_layers(fixture):
    """The TF stateful protocol: batch i = [sentences[0][i], sentences[1][i], sentences[2][i]], in order."""
    root = FIXTURES / fixture
    sentences = _golden_sentences(root)
    embedder = ElmoEmbedder.from_bilm_tf(root / "options.json", root / "lm_weights.hdf5", stateful=True)
    P = embedder.bilm.config.projection_dim
    expected = [h5py.File(root / f"lm_embeddings_{k}.hdf5", "r") for k in range(3)]
    for i in range(len(sentences[0])):
        batch = [sentences[k][i].split() for k in range(3)]
        for k, layers in enumerate(embedder.embed_batch(batch)):
            top = layers[-1]  # (n, 2P) = [forward | backward]
            reference = expected[k][str(i)][...]  # (2, n, P)
            np.testing.assert_allclose(np.stack([top[:, :P], top[:, P:]]), reference, **TOL)


def test_tensorflow_golden_token_embeddings():
    root = FIXTURES / "tf_golden_allennlp_skip"
    bilm = load_bilm_tf(root / "options.json", root / "lm_weights.hdf5").eval()
    reference = h5py.File(root / "elmo_token_embeddings.hdf5", "r")["embedding"][...]
    vocab = (root / "vocab_test.txt").read_text(encoding="utf-8").split("\n")[: reference.shape[0]]
    with torch.no_grad():
        vectors = bilm.token_encoder(batch_to_ids([vocab])[0])
    np.testing.assert_allclose(vectors.numpy(), reference, **TOL)
