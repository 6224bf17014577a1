"""A model's config can only make its loader allocate what the weight files justify.

Modules are built from the sizes in ``config.json`` / ``options.json`` before any weight is read, so
a config naming 100000 layers would otherwise allocate until the machine runs out.
``build_within_budget(build, weight_files, source)`` (``build_within_bytes`` for weights held in
memory, e.g. inside a saved spaCy pipeline) first runs ``build()`` as a dry run: every
tensor constructor makes a meta tensor (no memory) whose bytes are counted, and in-place
initialisation of meta tensors is skipped. The running total may not exceed

    budget = ALLOCATION_FACTOR * (bytes of the weight files on disk) + SLACK_BYTES

(the factor covers float16 and int8 storage loaded as float32, and tied weights built once before
they are tied); a config over the budget is refused in one line the moment the total passes it.
Only then is ``build()`` run for real. The dry run draws no random numbers, so the real build is
initialised exactly as without it. ``initialise=False`` (for loaders that fill every parameter and
buffer from the file) skips the second build: the dry run's module is given uninitialised memory
(``torch.empty``), so no random initialisation is computed only to be overwritten; with ``dtype``
its floating-point tensors are made in that dtype (a bf16 model loads straight into bf16 memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import torch
from torch.overrides import TorchFunctionMode

from ..errors import ModelDirError

ALLOCATION_FACTOR = 8
SLACK_BYTES = 1 << 20
CONSTRUCTORS = frozenset({torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn})
Built = TypeVar("Built")


class _DryRun(TorchFunctionMode):
    def __init__(self, limit: int, refusal: str):
        super().__init__()
        self.limit, self.spent, self.refusal = limit, 0, refusal

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in CONSTRUCTORS:
            planned = func(*args, **{**kwargs, "device": "meta"})
            self.spent += planned.numel() * planned.element_size()
            if self.spent > self.limit:
                raise ModelDirError(self.refusal)
            return planned
        name = getattr(func, "__name__", "")
        first = next(iter([*args, *kwargs.values()]), None)
        if name.endswith("_") and not name.startswith("__") and isinstance(first, torch.Tensor) and first.is_meta:
            return first  # in-place initialisation (uniform_, normal_, zero_, ...) of a meta tensor: nothing to do
        return func(*args, **kwargs)


def build_within_budget(
    build: Callable[[], Built],
    weight_files: Iterable[Path],
    config_source: str,
    initialise: bool = True,
    dtype: torch.dtype | None = None,
) -> Built:
    """``build()``, once a dry run has shown that it allocates no more than ``weight_files`` justify."""
    files = list(weight_files)
    weight_bytes = sum(file.stat().st_size for file in files)
    return build_within_bytes(build, weight_bytes, ", ".join(map(str, files)), config_source, initialise, dtype)


def build_within_bytes(
    build: Callable[[], Built],
    weight_bytes: int,
    weights: str,
    config_source: str,
    initialise: bool = True,
    dtype: torch.dtype | None = None,
) -> Built:
    """``build()``, once a dry run has shown that it allocates no more than ``weight_bytes`` of stored
    weights (``weights`` names them) justify; ``initialise=False``: a module whose parameters and buffers
    hold uninitialised memory, for the caller to fill, its floating-point ones in ``dtype`` if given."""
    limit = ALLOCATION_FACTOR * weight_bytes + SLACK_BYTES
    refusal = (
        f"{config_source} describes a model larger than its weights ({weights}, {limit:,} bytes at most as loaded): "
        "the config is damaged or belongs to another model"
    )
    with _DryRun(limit, refusal):
        planned = build()
    if not initialise:  # Module.to_empty would do, but its meta-tensor path imports sympy (0.4 s)
        return planned._apply(lambda tensor: torch.empty(tensor.shape, dtype=_dtype(tensor, dtype)))
    return build()


def _dtype(tensor: torch.Tensor, floating: torch.dtype | None) -> torch.dtype:
    return floating if floating is not None and tensor.is_floating_point() else tensor.dtype
