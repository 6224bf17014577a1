"""This process's place among the processes that share a job, as torchrun describes it: the one
torch.distributed setup, used by the corpus job and by training alike.

torchrun (or ``torch.distributed.launcher.api.elastic_launch``, behind ``--processes``) sets RANK,
WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE. Each rank gets one GPU, ``cuda:LOCAL_RANK``, when the
device asked for is CUDA; on the CPU, cores / local processes threads unless OMP_NUM_THREADS says
otherwise. The ranks join a torch.distributed process group (nccl on GPUs, gloo on the CPU).
``barrier(what, timeout)`` meets the other ranks through the group's key-value store, so a rank that
does not arrive in time is named ("rank 1 did not reach the end of its share within 0:10:00"),
never waited for forever. A process started by torchrun dies with its launcher, so a killed
launcher leaves no rank running on. Alone (no WORLD_SIZE), a process is rank 0 of 1 and needs no
process group.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from dataclasses import dataclass, field
from datetime import timedelta

import torch
import torch.distributed as dist

from .devices import rank_device
from .errors import ContextualError
from .threads import core_share

BARRIER_TIMEOUT = timedelta(minutes=10)
PR_SET_PDEATHSIG = 1


class RankTimeout(ContextualError):
    """A rank did not reach a barrier in time (it hangs, or died without its launcher noticing)."""


@dataclass
class Runtime:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    barriers: int = 0  # barriers passed so far: each has its own keys in the store

    @classmethod
    def from_environment(cls, device: str = "cpu") -> Runtime:
        """The ranks torchrun started, or rank 0 of 1; joins the process group when there are several."""
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        runtime = cls(
            rank=process_rank(),
            world_size=world_size,
            local_rank=local_rank,
            local_world_size=int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
            device=rank_device(device, local_rank, world_size),
        )
        if "TORCHELASTIC_RUN_ID" in os.environ:
            _die_with_parent()
        if world_size > 1:
            if "OMP_NUM_THREADS" not in os.environ and runtime.device.type == "cpu":
                torch.set_num_threads(core_share(runtime.local_world_size))
            if not dist.is_initialized():
                dist.init_process_group(backend="nccl" if runtime.device.type == "cuda" else "gloo")
        return runtime

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def barrier(self, what: str, timeout: timedelta = BARRIER_TIMEOUT) -> None:
        """Wait until every rank has reached ``what``; ``RankTimeout`` names the ranks still missing."""
        if not self.distributed:
            return
        store = dist.distributed_c10d._get_default_store()
        self.barriers += 1
        keys = [f"spacy_contextual/barrier/{self.barriers}/{rank}" for rank in range(self.world_size)]
        store.set(keys[self.rank], what)
        try:
            store.wait(keys, timeout)
        except RuntimeError:  # torch's DistStoreError on a timeout
            missing = [rank for rank, key in enumerate(keys) if not store.check([key])]
            names = ", ".join(map(str, missing)) or "?"
            raise RankTimeout(
                f"rank {names} did not reach {what} within {timeout}; it hangs or died: stop the run and rerun "
                "the same command to continue"
            ) from None

    def close(self) -> None:
        if self.distributed and dist.is_initialized():
            dist.destroy_process_group()


def process_rank() -> int:
    """This process's rank under torchrun (0 when run alone)."""
    return int(os.environ.get("RANK", "0"))


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its launcher dies (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the launcher died before the request was made
        os.kill(os.getpid(), signal.SIGKILL)
