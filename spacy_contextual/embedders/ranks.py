"""This process's place among the processes that share a job, as torchrun describes it.

torchrun (or ``torch.distributed.launcher.api.elastic_launch``) sets RANK, WORLD_SIZE, LOCAL_RANK and
LOCAL_WORLD_SIZE. Each rank gets one GPU, ``cuda:LOCAL_RANK``, when the device asked for is CUDA;
on the CPU, cores / local processes threads unless OMP_NUM_THREADS says otherwise. The ranks meet
at barriers of a torch.distributed process group (nccl on GPUs, gloo on the CPU), as training does.
A process started by torchrun dies with its launcher, so a killed launcher leaves no rank running
on. Alone (no WORLD_SIZE), a process is rank 0 of 1 and needs no process group.
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

from ..devices import rank_device
from ..threads import core_share

# Ranks that finish their share first wait at the last barrier for the others. Shares interleave,
# so they end close together, but a resumed rank may have much more left than the rest.
BARRIER_TIMEOUT = timedelta(hours=24)
PR_SET_PDEATHSIG = 1


@dataclass
class Ranks:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @classmethod
    def from_environment(cls, device: str = "cpu") -> Ranks:
        """The ranks torchrun started, or rank 0 of 1; joins the process group when there are several."""
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        ranks = cls(
            rank=int(os.environ.get("RANK", "0")),
            world_size=world_size,
            local_rank=local_rank,
            local_world_size=int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
            device=rank_device(device, local_rank, world_size),
        )
        if "TORCHELASTIC_RUN_ID" in os.environ:
            _die_with_parent()
        if world_size > 1:
            if "OMP_NUM_THREADS" not in os.environ and ranks.device.type == "cpu":
                torch.set_num_threads(core_share(ranks.local_world_size))
            if not dist.is_initialized():
                backend = "nccl" if ranks.device.type == "cuda" else "gloo"
                dist.init_process_group(backend=backend, timeout=BARRIER_TIMEOUT)
        return ranks

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier(device_ids=[self.device.index] if self.device.type == "cuda" else None)

    def close(self) -> None:
        if self.world_size > 1 and dist.is_initialized():
            dist.destroy_process_group()


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its launcher dies (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the launcher died before the request was made
        os.kill(os.getpid(), signal.SIGKILL)
