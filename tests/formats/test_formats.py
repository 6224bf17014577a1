"""bilm-tf HDF5 loading (any architecture), clear errors, export round trip, our safetensors dir.

A round trip is compared bit for bit: one process, the same kernels, and weights loaded at the alignment
torch gives a model built in memory (a matrix kernel may round differently on a weight that starts
mid-cache-line; safetensors puts its tensors 8 bytes apart, so the loader copies those)."""

import json
import shutil

import h5py
import numpy as np
import pytest
import torch
from util import tiny_bilm

from spacy_contextual.formats.bilm_dir import load_bilm, save_bilm
from spacy_contextual.formats.bilm_tf import WeightFileError, export_bilm_tf, load_bilm_tf
from spacy_contextual.formats.model_dir import ALIGNMENT
from spacy_contextual.models.chars import batch_to_ids

SENTENCES = [["The", "bank", "of", "the", "river", "."], ["naïve", "Zürich", "x" * 60], [], ["<S>", "ok"]]


def _outputs(bilm):
    with torch.no_grad():
        return [a.numpy() for a in bilm.eval()(batch_to_ids(SENTENCES)).activations]


VARIANTS = {
    "released-shape": {},
    "no-highway": {"n_highway": 0},
    "no-cnn-projection": {"filters": [[1, 4], [2, 4], [3, 8]]},  # n_filters == P == 16
    "no-lstm-projection": {"lstm_dim": 16},  # P == D: no W_P_0
    "no-skip": {"use_skip_connections": False},
    "tanh-3-layers": {"activation": "tanh", "n_layers": 3, "n_highway": 2},
    "no-clipping": {"cell_clip": None, "proj_clip": None},
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_export_round_trip_is_exact(tmp_path, variant):
    bilm = tiny_bilm(**VARIANTS[variant])
    options, weights = export_bilm_tf(bilm, tmp_path)
    with h5py.File(weights) as f:
        assert ("CNN_proj/W_proj" in f) == (bilm.config.n_filters != bilm.config.projection_dim)
        assert ("RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0" in f) == (
            bilm.config.projection_dim < bilm.config.lstm_dim
        )
        assert ("CNN_high_0/W_carry" in f) == (bilm.config.n_highway > 0)
        assert f["char_embed"].shape == (261, 4)
    loaded = load_bilm_tf(options, weights)
    for ours, theirs in zip(_outputs(bilm), _outputs(loaded), strict=True):
        assert np.array_equal(ours, theirs)
    # and the exported files load again into identical files
    export_bilm_tf(loaded, tmp_path / "again")
    with h5py.File(weights) as a, h5py.File(tmp_path / "again" / "weights.hdf5") as b:
        for name in a:
            if isinstance(a[name], h5py.Dataset):
                assert np.array_equal(a[name][...], b[name][...])


def test_model_dir_round_trip(tmp_path):
    bilm = tiny_bilm()
    save_bilm(bilm, tmp_path / "m", info={"note": "test"})
    for ours, theirs in zip(_outputs(bilm), _outputs(load_bilm(tmp_path / "m")), strict=True):
        assert np.array_equal(ours, theirs)
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["kind"] == "elmo-bilm" and config["info"] == {"note": "test"}
    assert not list(tmp_path.glob("m/*.bin")) and not list(tmp_path.glob("m/*.pt"))
    assert all(p.data_ptr() % ALIGNMENT == 0 for p in load_bilm(tmp_path / "m").parameters())


def test_model_dir_fp16_storage(tmp_path):
    bilm = tiny_bilm()
    save_bilm(bilm, tmp_path / "half", dtype=torch.float16)
    save_bilm(bilm, tmp_path / "full")
    half_size = (tmp_path / "half" / "model.safetensors").stat().st_size
    assert half_size < 0.6 * (tmp_path / "full" / "model.safetensors").stat().st_size
    for ours, theirs in zip(_outputs(bilm), _outputs(load_bilm(tmp_path / "half")), strict=True):
        np.testing.assert_allclose(ours, theirs, atol=2e-2)


def test_model_dir_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a spacy-contextual model directory"):
        load_bilm(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"kind": "cove-encoder"}))
    with pytest.raises(ValueError, match="'cove-encoder' model, not an 'elmo-bilm'"):
        load_bilm(tmp_path)


@pytest.fixture
def anchor_copy(tmp_path, tiny_anchor):
    root, _, _ = tiny_anchor
    shutil.copy(root / "options.json", tmp_path / "options.json")
    shutil.copy(root / "weights.hdf5", tmp_path / "weights.hdf5")
    return tmp_path / "options.json", tmp_path / "weights.hdf5"


def test_missing_dataset_is_named(anchor_copy):
    options, weights = anchor_copy
    with h5py.File(weights, "a") as f:
        del f["CNN_high_1/W_carry"]
    with pytest.raises(WeightFileError, match="no dataset 'CNN_high_1/W_carry'"):
        load_bilm_tf(options, weights)


def test_wrong_shape_is_named(anchor_copy):
    options, weights = anchor_copy
    with h5py.File(weights, "a") as f:
        del f["CNN/b_cnn_2"]
        f["CNN/b_cnn_2"] = np.zeros(5, np.float32)
    with pytest.raises(WeightFileError, match=r"'CNN/b_cnn_2' .* shape \(5,\) but the options imply \(16,\)"):
        load_bilm_tf(options, weights)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda o: o["lstm"].update(dim=128), "RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"),
        (lambda o: o["char_cnn"].update(n_highway=1), "datasets the options do not use: \\['CNN_high_1"),
        (lambda o: o["lstm"].update(n_layers=3), "Cell2"),
        (lambda o: o["char_cnn"]["filters"].pop(), "CNN/W_cnn_2|CNN_high_0"),
    ],
)
def test_options_that_do_not_match_the_weights(anchor_copy, change, message):
    options, weights = anchor_copy
    data = json.loads(options.read_text())
    change(data)
    options.write_text(json.dumps(data))
    with pytest.raises(WeightFileError, match=message):
        load_bilm_tf(options, weights)


def test_truncated_and_non_hdf5_files(anchor_copy, tmp_path):
    options, weights = anchor_copy
    truncated = tmp_path / "truncated.hdf5"
    truncated.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(WeightFileError, match="truncated|cannot read"):
        load_bilm_tf(options, truncated)
    text = tmp_path / "weights.txt"
    text.write_text("not hdf5")
    with pytest.raises(WeightFileError, match="not a readable HDF5 file"):
        load_bilm_tf(options, text)
    with pytest.raises(FileNotFoundError, match="weight file not found"):
        load_bilm_tf(options, tmp_path / "nope.hdf5")
    options.write_text("{not json")
    with pytest.raises(WeightFileError, match="not valid JSON"):
        load_bilm_tf(options, weights)


def test_options_missing_key(anchor_copy):
    options, weights = anchor_copy
    data = json.loads(options.read_text())
    del data["lstm"]["dim"]
    options.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="missing the key 'dim'"):
        load_bilm_tf(options, weights)


def test_large_weights_are_saved_as_shards_and_load_whole(tmp_path, monkeypatch):
    from spacy_contextual.formats import model_dir

    tensors = {f"w{i}": torch.randn(64, 64) for i in range(5)}  # 16 KiB each
    monkeypatch.setattr(model_dir, "MAX_SHARD_BYTES", 40_000)
    out = model_dir.save_model_dir(tmp_path / "m", "test", {}, tensors)
    names = [f.name for f in model_dir.weight_files(out)]
    assert names == [
        "model-00001-of-00003.safetensors",
        "model-00002-of-00003.safetensors",
        "model-00003-of-00003.safetensors",
    ]
    loaded = model_dir.load_tensors(out)
    assert list(loaded) == list(tensors) and all(torch.equal(loaded[k], tensors[k]) for k in tensors)
    monkeypatch.setattr(model_dir, "MAX_SHARD_BYTES", 10**9)
    model_dir.save_model_dir(out, "test", {}, tensors)  # re-saving in one file removes the old shards
    assert [f.name for f in model_dir.weight_files(out)] == ["model.safetensors"]
    model_dir.save_model_dir(tmp_path / "m2", "test", {}, tensors)
    (tmp_path / "m2" / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model.safetensors is missing"):
        model_dir.load_tensors(tmp_path / "m2")


def test_a_missing_shard_is_named(tmp_path, monkeypatch):
    from spacy_contextual.formats import model_dir

    monkeypatch.setattr(model_dir, "MAX_SHARD_BYTES", 40_000)
    out = model_dir.save_model_dir(tmp_path / "m", "test", {}, {f"w{i}": torch.randn(64, 64) for i in range(5)})
    (out / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="has 2 of its 3 weight shards"):
        model_dir.load_tensors(out)
