"""The precision setting every encoder reads: the embedders' ``precision=``, ``--precision`` on the
command line, ``model.precision`` of the ``elmo`` / ``cove`` components.

    "fp32"   float32 throughout (the default; exact)
    "bf16"   bfloat16 matrix products with float32 accumulation; the CPU and CUDA
    "fp16"   float16 matrix products; CUDA only

``ElmoEmbedder`` casts the biLM's weights once (``cast_weights``) and runs the char CNN, highway,
projections and LSTM products in that dtype; the LSTM cell state, its gates and the clipping stay in
float32 (``models/lstm.py``); so does the ``elmo`` component when it runs without training (on a cast
copy, ``layers/shim.py``), while training autocasts its float32 weights. The CoVe encoder autocasts
(``autocast``). The returned arrays are float32 whatever the precision.

bf16 is fast only where the CPU multiplies bf16 natively (AVX-512 BF16 or AMX, ``hardware.py``);
elsewhere torch emulates it through float32 and a bf16 run is slower than fp32: the first such run
in a process warns once.
"""

from __future__ import annotations

import warnings
from contextlib import AbstractContextManager

import torch
from torch import nn

from .devices import autocast as autocast_to
from .errors import ContextualError
from .hardware import bf16_is_fast

PRECISIONS = ("fp32", "bf16", "fp16")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
#: what the components' old ``mixed_precision = true`` meant on each device type
MIXED = "mixed"
MIXED_BY_DEVICE = {"cuda": "fp16", "cpu": "bf16"}

_warned_slow_bf16 = False


class PrecisionError(ContextualError):
    """A precision that is not one of ``PRECISIONS``, or one the device cannot compute."""


def check_precision(precision: str, allow_mixed: bool = False) -> str:
    """``precision`` if it is one of ``PRECISIONS`` (or ``MIXED``, where the components' old
    ``mixed_precision = true`` may have set it); raises ``PrecisionError`` naming the choices."""
    if precision not in PRECISIONS and not (allow_mixed and precision == MIXED):
        raise PrecisionError(f"unknown precision {precision!r}: use {', '.join(PRECISIONS)}")
    return precision


def resolve_precision(precision: str, device: torch.device) -> str:
    """The precision to run on ``device``: ``MIXED`` becomes fp16 on CUDA and bf16 on the CPU; fp16 on
    the CPU and bf16 on a GPU without bf16 are errors; bf16 on a CPU without native bf16 warns once."""
    if precision == MIXED:
        precision = MIXED_BY_DEVICE.get(device.type, "fp32")
    check_precision(precision)
    if precision == "fp16" and device.type != "cuda":
        raise PrecisionError("precision fp16 runs on CUDA only; use bf16 (or fp32) on the CPU")
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise PrecisionError(f"{torch.cuda.get_device_name(device)} cannot compute bf16; use fp16 or fp32")
    if precision == "bf16" and device.type == "cpu":
        warn_if_bf16_slow()
    return precision


def warn_if_bf16_slow() -> None:
    """One warning per process: bf16 on this CPU is emulated and slower than fp32."""
    global _warned_slow_bf16
    if _warned_slow_bf16 or bf16_is_fast():
        return
    _warned_slow_bf16 = True
    warnings.warn(
        "this CPU has no native bf16 (AVX-512 BF16 or AMX): bf16 is emulated here and runs slower than fp32; "
        "use precision fp32 on this machine",
        stacklevel=3,
    )


def cast_weights(module: nn.Module, precision: str) -> nn.Module:
    """The module with its floating-point parameters and buffers in ``precision``'s dtype (in place, once);
    fp32 leaves the module as it is."""
    return module if precision == "fp32" else module.to(DTYPES[precision])


def autocast(precision: str, device: torch.device) -> AbstractContextManager:
    """Autocast to ``precision``'s dtype on ``device`` (already resolved); nothing for fp32."""
    return autocast_to(device, None if precision == "fp32" else DTYPES[precision])
