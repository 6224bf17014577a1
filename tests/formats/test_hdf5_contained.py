"""A bilm-tf weights.hdf5 whose data comes from another file (external storage, an external link, a
virtual dataset) is refused, naming the file and the dataset; a plain export still loads."""

import h5py
import pytest
import torch
from typer.testing import CliRunner
from util import tiny_bilm

from spacy_contextual.cli import app
from spacy_contextual.formats.bilm_dir import load_bilm
from spacy_contextual.formats.bilm_tf import export_bilm_tf, load_bilm_tf
from spacy_contextual.formats.hdf5_contained import NotSelfContainedError
from spacy_contextual.hub.resolver import bundled_model_dir

TARGET = "RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/B"


def _replace(weights, make):
    """Rewrite dataset TARGET of ``weights`` with ``make(file, name, data)``, which puts the data elsewhere."""
    with h5py.File(weights, "r+") as f:
        data = f[TARGET][...]
        del f[TARGET]
        make(f, TARGET, data)


def external_storage(tmp_path):
    raw = tmp_path / "elsewhere.bin"

    def make(f, name, data):
        raw.write_bytes(data.astype("<f4").tobytes())
        f.create_dataset(name, shape=data.shape, dtype="<f4", external=[(str(raw), 0, data.nbytes)])

    return make, "external file"


def external_link(tmp_path):
    other = tmp_path / "elsewhere.hdf5"

    def make(f, name, data):
        with h5py.File(other, "w") as source:
            source.create_dataset(name, data=data)
        f[name] = h5py.ExternalLink(str(other), name)

    return make, "external link"


def virtual_dataset(tmp_path):
    other = tmp_path / "elsewhere.hdf5"

    def make(f, name, data):
        with h5py.File(other, "w") as source:
            source.create_dataset(name, data=data)
        layout = h5py.VirtualLayout(shape=data.shape, dtype=data.dtype)
        layout[...] = h5py.VirtualSource(str(other), name, shape=data.shape)
        f.create_virtual_dataset(name, layout)

    return make, "virtual dataset"


MODELS = {"tiny": tiny_bilm, "bundled": lambda: load_bilm(bundled_model_dir("elmo"))}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("hostile", [external_storage, external_link, virtual_dataset])
def test_data_from_another_file_is_refused(tmp_path, hostile, model):
    bilm = MODELS[model]()
    options, weights = export_bilm_tf(bilm, tmp_path / "model")
    make, words = hostile(tmp_path)
    _replace(weights, make)
    with h5py.File(weights) as f:  # the file reads, and its data is the other file's
        assert f[TARGET].shape == (4 * bilm.config.lstm_dim,)
    with pytest.raises(NotSelfContainedError, match=words) as refused:
        load_bilm_tf(options, weights)
    message = str(refused.value)
    assert str(weights) in message and TARGET in message and "\n" not in message


@pytest.mark.timeout(60)
def test_the_command_line_refuses_it_in_one_line(tmp_path):
    options, weights = export_bilm_tf(tiny_bilm(), tmp_path / "model")
    make, _ = external_link(tmp_path)
    _replace(weights, make)
    text = tmp_path / "in.txt"
    text.write_text("the bank .\n", encoding="utf-8")
    args = ["elmo", text, tmp_path / "out.hdf5", "--top", "--options-file", options, "--weight-file", weights]
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and TARGET in result.stderr
    assert not (tmp_path / "out.hdf5").exists()


def test_soft_links_inside_the_file_are_allowed(tmp_path):
    options, weights = export_bilm_tf(tiny_bilm(), tmp_path / "model")
    with h5py.File(weights, "r+") as f:
        f["CNN_alias"] = h5py.SoftLink("/CNN")
    loaded = load_bilm_tf(options, weights)
    original = tiny_bilm()
    for name, tensor in original.state_dict().items():  # the same weights as a file without the link
        assert torch.equal(loaded.state_dict()[name].to(tensor.dtype), tensor), name
