"""Independent runs (the fine-tuning grid) dispatched to workers through Dask distributed, an optional extra
(`pip install -r requirements-cluster.txt`): one process per local GPU, or any Dask cluster.

    workers = ""                  # serial, in the chapter's process (the default; no extra needed)
    workers = "local:4"           # four local worker processes (one per GPU when there are GPUs; cores divided otherwise)
    workers = "tcp://host:8786"   # a running Dask scheduler: e.g. workers started as SLURM jobs by dask-jobqueue

Dask, not Ray or submitit: its futures are the concurrent.futures interface the grid already speaks, a LocalCluster
gives local workers with no setup, the same code reaches a cluster through a scheduler address, and dask-jobqueue
starts workers as SLURM, PBS, SGE or LSF jobs. Each run keeps its cache key, so a grid resumes and a run is never
computed twice; results come back in grid order, identical to a serial run's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from ..errors import BookError, require
from ..settings import cpu_share, thread_env

GPU = "GPU"  # the Dask resource a GPU worker offers and a run asks for


@contextmanager
def pool(workers: str) -> Iterator[Any | None]:
    """A Dask client for `workers` ("" gives None: serial), closed (with a local cluster) afterwards."""
    if not workers:
        yield None
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise BookError(
            f"workers={workers!r} needs Dask distributed: pip install -r requirements-cluster.txt (or set workers to '' for a serial grid)"
        ) from None
    if workers.startswith("local:"):
        n = workers.removeprefix("local:")
        require(n.isdigit() and int(n) > 0, f"workers={workers!r}: write local:N with N ≥ 1 worker processes")
        gpus = torch.cuda.device_count()
        threads = 1 if gpus else cpu_share(int(n))
        resources = {GPU: 1} if gpus else None
        with (
            LocalCluster(n_workers=int(n), threads_per_worker=1, processes=True, resources=resources, env=thread_env(threads)) as cluster,
            Client(cluster) as client,
        ):
            yield client
        return
    require("://" in workers, f"workers={workers!r}: use '' (serial), local:N, or a Dask scheduler address such as tcp://host:8786")
    with Client(workers) as client:
        yield client


def worker_device(device: str) -> str:
    """Inside a worker: "auto" becomes this worker's GPU (workers of a local cluster are numbered; worker k takes GPU k
    mod the GPUs it sees); anything else, or outside a worker, as given."""
    if device != "auto" or not torch.cuda.is_available():
        return device
    try:
        from distributed import get_worker

        name = get_worker().name
    except (ImportError, ValueError):
        return device
    return f"cuda:{int(name) % torch.cuda.device_count()}" if str(name).isdigit() else device


def submit(client: Any, function: Any, *args: Any) -> Any:
    """A future for function(*args) on the client's workers (each run alone on a GPU where workers offer one)."""
    gpu = any(GPU in (w.get("resources") or {}) for w in client.scheduler_info().get("workers", {}).values())
    return client.submit(function, *args, pure=False, resources={GPU: 1} if gpu else None)
