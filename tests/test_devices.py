"""Device names: one reader for every device setting (embedders, the elmo command, training); a CUDA
device torch cannot see is an error that says so, never a quiet fall-back to the CPU."""

import h5py
import pytest
import torch
from typer.testing import CliRunner
from util import tiny_bilm, tiny_cove_dir

from spacy_contextual.devices import DeviceError, rank_device
from spacy_contextual.embedders.cove_embedder import CoveEmbedder
from spacy_contextual.embedders.elmo_embedder import ElmoEmbedder
from spacy_contextual.runtime import Runtime

HAS_CUDA = torch.cuda.is_available()
NONSENSE = ["gpu", "cuda:", "cuda:x", "cuda0", "cpu:1", "tpu", ""]
CHOICES = "use cpu, cuda, cuda:N or auto"
NO_CUDA = "torch sees no CUDA device"


def test_names_of_the_cpu():
    from spacy_contextual.devices import resolve_device

    for name in ("cpu", " CPU ", "cpu:0", torch.device("cpu")):
        assert resolve_device(name) == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cuda" if HAS_CUDA else "cpu")


@pytest.mark.parametrize("name", NONSENSE)
def test_nonsense_names_the_choices(name):
    from spacy_contextual.devices import DeviceError, resolve_device

    with pytest.raises(DeviceError, match=CHOICES):
        resolve_device(name)
    with pytest.raises(DeviceError, match="a device is a name"):
        resolve_device(0)


@pytest.mark.skipif(HAS_CUDA, reason="torch sees a CUDA device here")
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:1", torch.device("cuda", 0)])
def test_cuda_without_cuda_says_so(name):
    from spacy_contextual.devices import resolve_device
    from spacy_contextual.errors import ContextualError

    with pytest.raises(ContextualError, match=f"{NO_CUDA}.*use 'cpu'"):
        resolve_device(name)


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_cuda_indices():
    from spacy_contextual.devices import DeviceError, resolve_device

    count = torch.cuda.device_count()
    assert resolve_device("cuda") == torch.device("cuda")
    assert resolve_device(f"cuda:{count - 1}") == torch.device("cuda", count - 1)
    with pytest.raises(DeviceError, match=f"sees {count} CUDA device"):
        resolve_device(f"cuda:{count}")


# -- every place that takes a device reads it the same way ----------------------------------------


@pytest.mark.parametrize("name", ["gpu", "cuda0"])
def test_embedders_reject_nonsense(tmp_path, name):
    with pytest.raises(ValueError, match=CHOICES):
        ElmoEmbedder(tiny_bilm(), device=name)
    with pytest.raises(ValueError, match=CHOICES):
        CoveEmbedder.load(tiny_cove_dir(tmp_path / "cove"), device=name)


def test_embedders_take_auto_and_torch_devices(tmp_path):
    expected = torch.device("cuda" if HAS_CUDA else "cpu")
    assert ElmoEmbedder(tiny_bilm(), device="auto").device.type == expected.type
    assert CoveEmbedder.load(tiny_cove_dir(tmp_path / "cove"), device="auto").device.type == expected.type
    assert ElmoEmbedder(tiny_bilm(), device=torch.device("cpu")).device == torch.device("cpu")


@pytest.mark.skipif(HAS_CUDA, reason="torch sees a CUDA device here")
@pytest.mark.parametrize("name", ["cuda", "cuda:0"])
def test_training_on_a_cuda_device_that_is_not_there_is_an_error(name):
    with pytest.raises(ValueError, match=NO_CUDA):
        Runtime.from_environment(name)


@pytest.mark.parametrize("name", ["gpu", "cuda0"])
def test_training_rejects_nonsense(name):
    with pytest.raises(ValueError, match=CHOICES):
        Runtime.from_environment(name)


def test_training_device_auto_and_cpu():
    assert Runtime.from_environment("cpu").device == torch.device("cpu")
    assert Runtime.from_environment("auto").device.type == ("cuda" if HAS_CUDA else "cpu")


@pytest.mark.integration
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_training_device_under_torchrun(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert Runtime.from_environment("cuda").device == torch.device("cuda", 0)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="every torchrun process on one GPU"):
        Runtime.from_environment("cuda:0")


def test_elmo_command_reads_the_device(tiny_model_dir, tmp_path):
    from spacy_contextual.cli import app

    text = tmp_path / "in.txt"
    text.write_text("The bank .\n", encoding="utf-8")
    runner = CliRunner()
    command = ["elmo", str(text), str(tmp_path / "out.hdf5"), "--all", "--model", str(tiny_model_dir)]
    bad = runner.invoke(app, [*command, "--device", "gpu"])
    assert bad.exit_code == 1 and CHOICES in bad.stderr and "Traceback" not in bad.output  # one line, no traceback
    good = runner.invoke(app, [*command, "--device", "auto"])
    assert good.exit_code == 0, good.output
    with h5py.File(tmp_path / "out.hdf5") as out:
        assert out["0"].shape == (3, 3, 32)


@pytest.mark.integration
def test_each_torchrun_process_gets_the_gpu_of_its_local_rank(monkeypatch):
    """``rank_device`` (training and sharded embedding alike) on a stand-in machine with two GPUs."""
    current = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", current.append)
    assert rank_device("cuda", 1, 2) == torch.device("cuda", 1) and current == [torch.device("cuda", 1)]
    assert rank_device("auto", 0, 2) == torch.device("cuda", 0)
    assert rank_device("cuda:1", 0, 1) == torch.device("cuda", 1)  # one process may pick its GPU
    assert rank_device("cpu", 1, 2) == torch.device("cpu")
    with pytest.raises(DeviceError, match="local rank 2 needs GPU 2, but torch sees 2 GPU"):
        rank_device("cuda", 2, 3)
    with pytest.raises(DeviceError, match="every torchrun process on one GPU"):
        rank_device("cuda:0", 1, 2)
