"""A model's config can only make its loader allocate what the weight files justify.

Modules are built from the sizes in ``config.json`` / ``options.json`` before any weight is read, so
a config naming 100000 layers would otherwise allocate until the machine runs out. While a module
is built under ``allocation_budget(weight_files)``, every tensor constructor is first sized on the
meta device (no memory), and the running total may not exceed

    budget = ALLOCATION_FACTOR * (bytes of the weight files on disk) + SLACK_BYTES

(the factor covers float16 and int8 storage loaded as float32, and tied weights built once before
they are tied). A config over the budget is refused in one line before the allocation happens.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from ..errors import ModelDirError

ALLOCATION_FACTOR = 8
SLACK_BYTES = 1 << 20
CONSTRUCTORS = frozenset({torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn})


class _Budget(TorchFunctionMode):
    def __init__(self, limit: int, config_source: str, weight_source: str):
        super().__init__()
        self.limit, self.spent = limit, 0
        self.config_source, self.weight_source = config_source, weight_source

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in CONSTRUCTORS:
            planned = func(*args, **{**kwargs, "device": "meta"})
            self.spent += planned.numel() * planned.element_size()
            if self.spent > self.limit:
                raise ModelDirError(
                    f"{self.config_source} describes a model larger than its weights ({self.weight_source}, "
                    f"{self.limit:,} bytes at most as loaded): the config is damaged or belongs to another model"
                )
        return func(*args, **kwargs)


@contextmanager
def allocation_budget(weight_files: Iterable[Path], config_source: str) -> Iterator[None]:
    """Modules built inside may allocate at most the budget that ``weight_files`` justify."""
    files = list(weight_files)
    limit = ALLOCATION_FACTOR * sum(file.stat().st_size for file in files) + SLACK_BYTES
    with _Budget(limit, config_source, ", ".join(str(file) for file in files)):
        yield
