"""Devices and mixed precision: the one reader of every ``device`` setting (``ElmoEmbedder(device=)``,
``CoveEmbedder(device=)``, ``spacy-contextual elmo --device``, ``training.device``, the benchmarks).

    "cpu"           the CPU
    "cuda"          a CUDA device; torch's current one (under torchrun the trainer gives each process
                    the GPU of its LOCAL_RANK)
    "cuda:N"        CUDA device N
    "auto"          "cuda" when torch sees a CUDA device, else "cpu"
    torch.device    checked the same way

A CUDA device that torch cannot see is an error that says so, never a quiet fall-back to the CPU.

``autocast(device, dtype)`` is the mixed-precision context of the embedders and the trainer: the
matrix products and convolutions run in ``dtype`` (bf16 or fp16) on that device, the rest in float32.
``tf32(allowed)`` turns TF32 (10-bit mantissa products on recent NVIDIA GPUs, cuDNN's default for
convolutions and RNNs) on or off for a block: off when CUDA results are compared with the CPU's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import torch

from .errors import ContextualError

DEVICE_NAMES = "cpu, cuda, cuda:N or auto"
_DEVICE = re.compile(r"(cpu|cuda)(?::(\d+))?")


class DeviceError(ContextualError):
    """A device name that is not one of ``DEVICE_NAMES``, or a CUDA device torch does not see."""


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The torch device that ``device`` names; raises ``DeviceError`` for a name torch cannot use here."""
    if isinstance(device, torch.device):
        name = str(device)
    elif isinstance(device, str):
        name = device.strip().lower()
    else:
        raise DeviceError(f"a device is a name ({DEVICE_NAMES}) or a torch.device, got {type(device).__name__}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    match = _DEVICE.fullmatch(name)
    if match is None or (match[1] == "cpu" and match[2] not in (None, "0")):
        raise DeviceError(f"unknown device {device!r}: use {DEVICE_NAMES}")
    if match[1] == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        build = "built without CUDA" if torch.version.cuda is None else "no CUDA driver or GPU found"
        raise DeviceError(
            f"device {device!r} was asked for but torch sees no CUDA device (torch {torch.__version__}: {build}); "
            "use 'cpu', or 'auto' to take a GPU only when there is one"
        )
    if match[2] is None:
        return torch.device("cuda")
    index, count = int(match[2]), torch.cuda.device_count()
    if index >= count:
        raise DeviceError(
            f"device {device!r} was asked for but torch sees {count} CUDA device(s): cuda:0 to cuda:{count - 1}"
        )
    return torch.device("cuda", index)


def rank_device(device: str | torch.device, local_rank: int, world_size: int) -> torch.device:
    """The device of one process of a torchrun job: ``device`` resolved, where "cuda" (and "auto" on a
    GPU machine) means the GPU of ``local_rank``; a fixed "cuda:N" is refused when there are several
    processes, since all of them would share that GPU. The GPU becomes the process's current device."""
    target = resolve_device(device)
    if target.type != "cuda":
        return target
    if target.index is None:
        count = torch.cuda.device_count()
        if local_rank >= count:
            raise DeviceError(
                f"local rank {local_rank} needs GPU {local_rank}, but torch sees {count} GPU(s); "
                "start at most one process per GPU"
            )
        target = torch.device("cuda", local_rank)
    elif world_size > 1:
        raise DeviceError(
            f"device {device!r} would put every torchrun process on one GPU; give 'cuda' or 'auto' and each "
            "process takes the GPU of its LOCAL_RANK"
        )
    torch.cuda.set_device(target)
    return target


def autocast(device: torch.device, dtype: torch.dtype | None) -> AbstractContextManager:
    """Autocast to ``dtype`` on ``device``'s type; no autocast when ``dtype`` is None."""
    if dtype is None:
        return nullcontext()
    return torch.autocast(device.type, dtype=dtype)


@contextmanager
def tf32(allowed: bool) -> Iterator[None]:
    """TF32 in cuBLAS matrix products and cuDNN convolutions/RNNs allowed or not, within the block."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
