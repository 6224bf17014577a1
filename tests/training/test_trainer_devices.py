"""The trainer's GPU paths, on CPU stand-ins: the checkpoint's collectives put their buffers on the
collective's device (NCCL wants them on the rank's GPU); a checkpoint keeps and restores the GPU's
random state of every rank; ``training.mixed_precision`` (bf16 autocast) trains the biLM on every
batching and softmax, close to float32."""

from __future__ import annotations

import gzip
import json
from itertools import islice

import pytest
import torch
import torch.distributed as dist
from util import DATA, tiny_config

from spacy_contextual.models.bilm import BiLM
from spacy_contextual.runtime import Runtime
from spacy_contextual.training.batch_stream import StreamPosition
from spacy_contextual.training.config import PretrainConfig
from spacy_contextual.training.evaluate import load_language_model, perplexity
from spacy_contextual.training.lm import BidirectionalLM, SoftmaxConfig
from spacy_contextual.training.trainer import Trainer, build_language_model, pretrain
from spacy_contextual.training.vocab import LMVocabulary

CPU = Runtime(rank=0, world_size=1, device=torch.device("cpu"))


@pytest.fixture(scope="module")
def train_text(tmp_path_factory):
    path = tmp_path_factory.mktemp("lm") / "train.txt"
    with gzip.open(DATA / "lm_corpus" / "train.txt.gz", "rt", encoding="utf-8") as lines:
        path.write_text("".join(islice(lines, 300)), encoding="utf-8")
    return path


def config_for(train_text, output_dir, data=None, softmax=None, **training) -> PretrainConfig:
    return PretrainConfig.from_dict(
        {
            "model": tiny_config().to_dict(),
            "softmax": {"cutoffs": [50, 200], "div_value": 2.0, **(softmax or {})},
            "data": {"train": [str(train_text)], "batch_tokens": 300, "min_count": 2, **(data or {})},
            "training": {
                "output_dir": str(output_dir),
                "warmup_steps": 2,
                "lr": 0.01,
                "dropout": 0.1,
                "validate_minutes": 1e6,
                "checkpoint_minutes": 1e6,
                **training,
            },
        }
    )


def trainer_for(train_text, tmp_path) -> Trainer:
    config = config_for(train_text, tmp_path / "run", max_steps=1)
    return Trainer(config, build_language_model(config, LMVocabulary.build([train_text], 2)), CPU, log=lambda m: None)


class Gathered(Exception):
    """Raised by the stand-in collective once it has checked its tensors."""


def test_checkpoint_gathers_on_the_collective_device(train_text, tmp_path, monkeypatch):
    """Two ranks on GPUs, as NCCL sees them: the meta device stands in for this rank's GPU, and the
    stand-in all_gather refuses any tensor elsewhere, as NCCL does."""
    trainer = trainer_for(train_text, tmp_path)
    trainer.runtime = Runtime(rank=0, world_size=2, device=torch.device("meta"))
    monkeypatch.setattr(dist, "get_backend", lambda group=None: "nccl")
    seen = []

    def nccl_all_gather(outputs, tensor, group=None, async_op=False):
        seen.append({tensor.device, *(output.device for output in outputs)})
        assert len(outputs) == 2
        if seen[-1] != {torch.device("meta")}:
            raise RuntimeError(f"NCCL: every tensor must be on the rank's GPU, got {seen[-1]}")
        raise Gathered

    monkeypatch.setattr(dist, "all_gather", nccl_all_gather)
    with pytest.raises(Gathered):
        trainer.save(StreamPosition(0, 1, 2))
    assert seen == [{torch.device("meta")}]


def test_checkpoint_restores_the_gpu_random_state(train_text, tmp_path, monkeypatch):
    """Dropout masks and sampled negatives on a GPU come from its generator: a resumed run goes on from
    the saved state, not from the seed. A CPU generator stands in for the GPU's."""
    gpu_generator = torch.Generator().manual_seed(11)
    devices = []

    def get_rng_state(device="cuda"):
        devices.append(torch.device(device))
        return gpu_generator.get_state()

    def set_rng_state(state, device="cuda"):
        devices.append(torch.device(device))
        gpu_generator.set_state(state)

    monkeypatch.setattr(torch.cuda, "get_rng_state", get_rng_state)
    monkeypatch.setattr(torch.cuda, "set_rng_state", set_rng_state)
    on_gpu = Runtime(rank=0, world_size=1, device=torch.device("cuda", 0))
    trainer = trainer_for(train_text, tmp_path)
    trainer.runtime = on_gpu
    torch.rand(3, generator=gpu_generator)  # the run has drawn from it
    trainer.save(StreamPosition())
    expected = torch.rand(5, generator=gpu_generator)  # what the run would draw next

    gpu_generator.manual_seed(11)  # a new process: seeded as at the start
    resumed = trainer_for(train_text, tmp_path)
    resumed.runtime = on_gpu
    resumed.restore()
    assert torch.equal(torch.rand(5, generator=gpu_generator), expected)
    assert devices == [torch.device("cuda", 0)] * 2


def test_biLM_loss_under_autocast_backpropagates(train_text):
    """The training objective under bf16 autocast: the softmax and the loss stay float32."""
    vocab = LMVocabulary.build([train_text], 2)
    torch.manual_seed(0)
    lm = BidirectionalLM(BiLM(tiny_config()), vocab, SoftmaxConfig([50, 200], 2.0)).train()
    sentences = [["The", "cat", "sat", "."], ["A", "dog", "barked", "at", "the", "cat", "!"]]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = lm(sentences)
    assert loss.forward_nll.dtype == loss.backward_nll.dtype == torch.float32
    loss.mean.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in lm.bilm.parameters())
    with torch.no_grad():
        exact = lm.eval()(sentences)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lowered = lm(sentences)
    assert lowered.mean.item() == pytest.approx(exact.mean.item(), rel=0.02) and lowered.mean != exact.mean


@pytest.mark.parametrize(
    "data, softmax",
    [({}, {}), ({"batching": "windows", "bptt_steps": 10}, {}), ({}, {"kind": "sampled", "negatives": 64})],
    ids=["sentences-adaptive", "bptt-windows", "sampled-softmax"],
)
@pytest.mark.integration  # trains to a measurable change: minutes of the fast tier
def test_mixed_precision_training_follows_float32(train_text, tmp_path, data, softmax):
    perplexities = []
    for mixed_precision in (False, True):
        output = tmp_path / f"mixed-{mixed_precision}"
        config = config_for(train_text, output, data, softmax, max_steps=15, mixed_precision=mixed_precision)
        summary = pretrain(config, log=lambda m: None)
        assert summary["step"] == 15
        saved = json.loads((output / "pretrain_config.json").read_text())
        assert saved["training"]["mixed_precision"] is mixed_precision
        lm, _ = load_language_model(output / "model")
        perplexities.append(perplexity(lm, train_text, max_sentences=60)["average"])
    fp32, bf16 = perplexities
    assert bf16 == pytest.approx(fp32, rel=0.05) and bf16 != fp32
