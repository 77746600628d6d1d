"""One process, or one of many started by `torchrun`: which rank this is, its device, and the collectives training uses.

torchrun sets RANK, WORLD_SIZE and LOCAL_RANK; without them this is rank 0 of 1 and nothing is initialised. With
several processes the process group uses NCCL on GPUs and gloo on CPUs, and each rank takes the GPU of its local rank.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ..errors import require
from ..settings import pick_device


@dataclass(frozen=True)
class World:
    rank: int
    size: int
    local_rank: int

    @property
    def main(self) -> bool:
        """Rank 0: the process that evaluates, reports and writes."""
        return self.rank == 0


def world() -> World:
    """This process's place among the processes torchrun started (rank 0 of 1 without torchrun)."""
    env = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    try:
        rank, size, local = int(env["RANK"] or 0), int(env["WORLD_SIZE"] or 1), int(env["LOCAL_RANK"] or 0)
    except ValueError:
        raise ValueError(f"RANK, WORLD_SIZE and LOCAL_RANK must be integers (torchrun sets them), got {env}") from None
    require(size >= 1 and 0 <= rank < size, f"RANK {rank} is not within WORLD_SIZE {size}; start the processes with torchrun")
    return World(rank, size, local)


def start(device: str = "auto") -> tuple[World, torch.device]:
    """Join the process group (when there are several processes) and pick this rank's device."""
    here = world()
    chosen = pick_device(device)
    if chosen.type == "cuda" and here.size > 1:
        require(
            here.local_rank < torch.cuda.device_count(),
            f"local rank {here.local_rank} has no GPU ({torch.cuda.device_count()} visible); start fewer processes per node",
        )
        chosen = torch.device("cuda", here.local_rank)
        torch.cuda.set_device(chosen)
    if here.size > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if chosen.type == "cuda" else "gloo")
    return here, chosen


def all_sum(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of tensor over all ranks (in place; no communication in a single process)."""
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(tensor)
    return tensor


def barrier() -> None:
    """Wait until every rank gets here (nothing in a single process)."""
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()
