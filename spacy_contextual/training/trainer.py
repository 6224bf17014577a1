"""The biLM pretraining / fine-tuning loop: single process, or DDP under ``torchrun``.

Each step: a batch of length-sorted sentences (or, with ``data.batching = "windows"``, one window of
truncated BPTT from the carried LSTM states) -> loss = (L_forward + L_backward) / predictions ->
backward -> clip the global gradient norm -> optimizer step with a warmup + linear-decay learning
rate. Every ``checkpoint_minutes`` a checkpoint is written (``--resume`` continues from it: same
weights, optimizer state, step, stream position and the random state of every rank, the CPU's and
on CUDA the GPU's, hence the same run; TBPTT restarts its carried state from zero); every
``validate_minutes`` the validation perplexity is measured and, when it improved, the fp16 biLM is
written to ``export_dir``.

Under ``torchrun`` (``WORLD_SIZE`` > 1) every rank reads its own shard of the corpus (line i goes
to rank i mod world size), gradients are averaged by DistributedDataParallel (gloo on CPU, nccl on
GPU, each process on the GPU of its LOCAL_RANK), and rank 0 decides when to validate, checkpoint and
stop and tells the others.

``training.mixed_precision`` runs the biLM's forward pass under bfloat16 autocast (the softmax, the
loss, the gradients and the weights stay float32; bf16 needs no loss scaling); validation runs in float32.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from ..devices import DeviceError, autocast
from ..errors import ContextualError
from ..models.bilm import BiLM
from ..models.chars import BOS_TOKEN, EOS_TOKEN
from ..runtime import Runtime
from ..writer import atomic_file
from .batch_stream import BatchStream, StreamPosition, Windows, WindowStream
from .checkpoint import check_same_run, load_checkpoint, prepare_checkpoint_dir, save_checkpoint
from .config import PretrainConfig
from .evaluate import perplexity
from .lm import BidirectionalLM
from .vocab import LMVocabulary

CHECKPOINT, VALIDATE, STOP = 1, 2, 4
VOCAB_TIMEOUT = timedelta(hours=6)  # rank 0 counts the words of every training file meanwhile


def random_states(device: torch.device) -> dict[str, torch.Tensor]:
    """The states of the generators a run on ``device`` draws from: the CPU's ("rng") and on CUDA the
    GPU's ("cuda_rng"), where dropout masks and sampled-softmax negatives come from."""
    states = {"rng": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda_rng"] = torch.cuda.get_rng_state(device)
    return states


def set_random_states(states: dict[str, torch.Tensor], device: torch.device) -> None:
    torch.set_rng_state(states["rng"])
    if device.type == "cuda" and "cuda_rng" in states:
        torch.cuda.set_rng_state(states["cuda_rng"], device)


def make_optimizer(config: PretrainConfig, parameters) -> torch.optim.Optimizer:
    name = config.training.optimizer
    if name == "adam":
        return torch.optim.Adam(parameters, lr=config.training.lr)
    if name == "adagrad":
        return torch.optim.Adagrad(parameters, lr=config.training.lr, initial_accumulator_value=1.0)
    raise ContextualError(f"training.optimizer must be 'adam' or 'adagrad', got {name!r}")


def learning_rate(config: PretrainConfig, step: int) -> float:
    t = config.training
    if step < t.warmup_steps:
        return t.lr * (step + 1) / t.warmup_steps
    end = t.lr_decay_steps or t.max_steps
    progress = min(1.0, (step - t.warmup_steps) / max(1, end - t.warmup_steps))
    return t.lr - (t.lr - t.lr_min) * progress


def vocabulary_path(config: PretrainConfig, output_dir: Path) -> Path:
    return Path(config.data.vocab) if config.data.vocab else output_dir / "vocab.txt"


def vocabulary_words(config: PretrainConfig, output_dir: Path) -> list[str] | None:
    """The words of the vocabulary the run would use, if it exists yet."""
    path = vocabulary_path(config, output_dir)
    return LMVocabulary.load(path).words if path.is_file() else None


def prepare_vocab(config: PretrainConfig, runtime: Runtime, output_dir: Path) -> LMVocabulary:
    """The configured vocab.txt, or one built from the training files (by rank 0) and saved."""
    path = vocabulary_path(config, output_dir)
    if not path.is_file() and config.data.vocab:
        raise FileNotFoundError(f"data.vocab = {path} does not exist; leave it empty to build one from data.train")
    if not path.is_file() and runtime.main:
        LMVocabulary.build(config.data.train, config.data.min_count).save(path)
    runtime.barrier("the vocabulary", VOCAB_TIMEOUT)
    return LMVocabulary.load(path)


class Trainer:
    def __init__(
        self, config: PretrainConfig, lm: BidirectionalLM, runtime: Runtime, log: Callable[[str], None] = print
    ):
        self.config, self.runtime, self.log = config, runtime, log
        self.output_dir = Path(config.training.output_dir)
        self.lm = lm.to(runtime.device)
        self.lm.set_dropout(config.training.dropout)
        # find_unused_parameters: a batch with no word of an adaptive-softmax tail cluster leaves that
        # cluster without a gradient, which plain DDP rejects ("expected to have finished reduction")
        self.model = DistributedDataParallel(self.lm, find_unused_parameters=True) if runtime.distributed else self.lm
        self.optimizer = make_optimizer(config, self.lm.parameters())
        self.autocast_dtype = torch.bfloat16 if config.training.mixed_precision else None
        if self.autocast_dtype is not None and runtime.device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise DeviceError(
                f"training.mixed_precision uses bfloat16, which {torch.cuda.get_device_name(runtime.device)} "
                "cannot compute; set training.mixed_precision = false"
            )
        self.state: dict[str, Any] = {
            "step": 0,
            "tokens": 0,
            "train_seconds": 0.0,
            "positions": [[0, 0, 0]] * runtime.world_size,
            "best_valid": None,
            "history": [],
            "config": config.to_dict(),
        }

    # -- checkpoints ------------------------------------------------------------------------------

    @property
    def checkpoint_dir(self) -> Path:
        return self.output_dir / "checkpoint"

    def restore(self) -> None:
        lm, state, optimizer_state, random_state = load_checkpoint(self.checkpoint_dir)
        if len(state["positions"]) != self.runtime.world_size:
            raise ContextualError(
                f"the checkpoint was written by {len(state['positions'])} processes; resume with the same number"
            )
        self.lm.load_state_dict(lm.state_dict())
        self.optimizer.load_state_dict(optimizer_state)
        self.state.update({k: v for k, v in state.items() if k != "config"})
        set_random_states({name: ranks[self.runtime.rank] for name, ranks in random_state.items()}, self.runtime.device)
        self.log(f"resumed from {self.checkpoint_dir} at step {state['step']}")

    def save(self, position: StreamPosition) -> None:
        here = torch.tensor([position.epoch, position.chunk, position.batch])
        self.state["positions"] = [p.tolist() for p in self._gather(here)]
        random_state = {name: self._gather(state) for name, state in random_states(self.runtime.device).items()}
        if self.runtime.main:
            save_checkpoint(self.checkpoint_dir, self.lm, self.optimizer, self.state, random_state)

    def _gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        """Every rank's ``tensor``, on the CPU. The collective runs on its backend's device: NCCL needs
        the input and every buffer on this rank's GPU."""
        if not self.runtime.distributed:
            return [tensor]
        local = tensor.to(self._collective_device())
        buffers = [torch.empty_like(local) for _ in range(self.runtime.world_size)]
        dist.all_gather(buffers, local)
        return [buffer.cpu() for buffer in buffers]

    def _collective_device(self) -> torch.device:
        return self.runtime.device if dist.get_backend() == "nccl" else torch.device("cpu")

    # -- validation -------------------------------------------------------------------------------

    def validate(self) -> dict | None:
        if not self.runtime.main or not self.config.data.valid:
            return None
        scores = perplexity(self.lm, self.config.data.valid, self.config.data.valid_sentences)
        scores = {"step": self.state["step"], "tokens": self.state["tokens"], **scores}
        self.state["history"].append(scores)
        improved = self.state["best_valid"] is None or scores["average"] < self.state["best_valid"]
        if improved:
            self.state["best_valid"] = scores["average"]
            if self.config.training.export_dir:
                self.lm.save(
                    self.config.training.export_dir,
                    dtype=getattr(torch, self.config.training.export_dtype),
                    info={"valid_perplexity": scores, "train_tokens": self.state["tokens"], "step": self.state["step"]},
                )
        self.log(
            f"step {scores['step']}: valid perplexity forward {scores['forward']:.1f} backward "
            f"{scores['backward']:.1f} "
            f"average {scores['average']:.1f}"
            + (" (best, exported)" if improved and self.config.training.export_dir else "")
        )
        return scores

    # -- the loop ---------------------------------------------------------------------------------

    def _events(self, started: float, last_checkpoint: float, last_validate: float) -> int:
        t = self.config.training
        now = time.time()
        flags = 0
        if self.runtime.main:
            if now - last_checkpoint >= t.checkpoint_minutes * 60:
                flags |= CHECKPOINT
            if now - last_validate >= t.validate_minutes * 60:
                flags |= VALIDATE
            if self.state["step"] >= t.max_steps or (t.max_minutes is not None and now - started >= t.max_minutes * 60):
                flags |= STOP
        if self.runtime.distributed:
            flag_tensor = torch.tensor([flags], device=self._collective_device())
            dist.broadcast(flag_tensor, 0)
            flags = int(flag_tensor.item())
        return flags

    def _stream(self):
        t, d = self.config.training, self.config.data
        shard = dict(seed=t.seed, rank=self.runtime.rank, world_size=self.runtime.world_size)
        if d.batching == "sentences":
            return BatchStream(d.train, d.batch_tokens, d.chunk_sentences, **shard)
        if d.batching == "windows":
            return WindowStream(d.train, d.batch_tokens, d.bptt_steps, d.chunk_sentences, **shard)
        raise ContextualError(f"data.batching must be 'sentences' or 'windows', got {d.batching!r}")

    def train(self) -> dict:
        t = self.config.training
        stream = self._stream()
        start = StreamPosition(*self.state["positions"][self.runtime.rank])
        started = last_checkpoint = last_validate = time.time()
        seconds_before = self.state["train_seconds"]
        self.lm.train()
        bar = tqdm(
            total=t.max_steps,
            initial=self.state["step"],
            disable=not self.runtime.main,
            unit="step",
            dynamic_ncols=True,
        )
        smoothed_loss, window_tokens, window_start = None, 0, time.time()
        position, carried = start, None
        batches = stream(start)
        final = None
        while True:
            flags = self._events(started, last_checkpoint, last_validate)
            if flags & (VALIDATE | STOP):  # at STOP before the checkpoint, so that it records best_valid
                final = self.validate()
                last_validate = time.time()
            if flags & (CHECKPOINT | STOP):
                self.state["train_seconds"] = seconds_before + time.time() - started
                self.save(position)
                last_checkpoint = time.time()
            if flags & STOP:
                break
            position, batch = next(batches)
            for group in self.optimizer.param_groups:
                group["lr"] = learning_rate(self.config, self.state["step"])
            with autocast(self.runtime.device, self.autocast_dtype):
                loss = self.model(batch, carried)
            carried = loss.states
            self.optimizer.zero_grad(set_to_none=True)
            loss.mean.backward()
            torch.nn.utils.clip_grad_norm_(self.lm.parameters(), t.grad_clip)
            self.optimizer.step()
            tokens = count_words(batch) * self.runtime.world_size  # other ranks: estimated alike
            self.state["step"] += 1
            self.state["tokens"] += tokens
            window_tokens += tokens
            value = loss.mean.item() / 2  # per direction
            smoothed_loss = value if smoothed_loss is None else 0.98 * smoothed_loss + 0.02 * value
            bar.update(1)
            if self.state["step"] % 10 == 0:
                rate = window_tokens / max(time.time() - window_start, 1e-9)
                bar.set_postfix(
                    tok_s=f"{rate:.0f}",
                    loss=f"{smoothed_loss:.3f}",
                    ppl=f"{math.exp(smoothed_loss):.1f}",
                    epoch=position.epoch,
                )
                window_tokens, window_start = 0, time.time()
        bar.close()
        summary = {
            "step": self.state["step"],
            "tokens": self.state["tokens"],
            "train_seconds": self.state["train_seconds"],
            "valid": final,
        }
        if self.runtime.main:
            self.lm.save(
                self.output_dir / "model",
                info={"valid_perplexity": final, "train_tokens": self.state["tokens"], "step": self.state["step"]},
            )
            with atomic_file(self.output_dir / "summary.json") as path:
                path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        return summary


def count_words(batch) -> int:
    """Corpus words in a batch (sentence boundaries not counted)."""
    if isinstance(batch, Windows):
        return sum(1 for window in batch.forward for word in window[:-1] if word not in (BOS_TOKEN, EOS_TOKEN))
    return sum(len(sentence) for sentence in batch)


def build_language_model(config: PretrainConfig, vocab: LMVocabulary) -> BidirectionalLM:
    torch.manual_seed(config.training.seed)
    return BidirectionalLM(BiLM(config.model), vocab, config.softmax)


def pretrain(
    config: PretrainConfig,
    resume: bool = False,
    lm: BidirectionalLM | None = None,
    log: Callable[[str], None] = print,
    overwrite: bool = False,
) -> dict:
    """Train (or, with ``lm`` given, fine-tune) a biLM as configured; returns the summary. An earlier
    run's checkpoint in the output directory is continued with ``resume``, deleted with ``overwrite``."""
    if not config.data.train:
        raise ContextualError("data.train is empty: give the training text files (one tokenised sentence per line)")
    runtime = Runtime.from_environment(config.training.device)
    if config.training.num_threads:
        torch.set_num_threads(config.training.num_threads)
    output_dir = Path(config.training.output_dir)
    checkpoint = output_dir / "checkpoint"
    if runtime.main:
        output_dir.mkdir(parents=True, exist_ok=True)
        prepare_checkpoint_dir(checkpoint, resume, overwrite)
    if resume:  # every rank refuses another run's checkpoint, before anything is written
        words = lm.vocab.words if lm is not None else vocabulary_words(config, output_dir)
        check_same_run(checkpoint, config.to_dict(), words)
    if runtime.main:
        config.save(output_dir / "pretrain_config.json")
    if lm is None:
        lm = build_language_model(config, prepare_vocab(config, runtime, output_dir))
    trainer = Trainer(config, lm, runtime, log=log if runtime.main else (lambda message: None))
    if resume:
        trainer.restore()
    else:  # dropout masks: repeatable, different on every rank
        torch.manual_seed(config.training.seed + 1000 * (runtime.rank + 1))
    try:
        return trainer.train()
    finally:
        runtime.close()
