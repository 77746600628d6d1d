"""Independent runs (the fine-tuning grid) side by side: on this machine's free CPU cores, or dispatched to workers
through Dask distributed, an optional extra (`pip install -r requirements-cluster.txt`): one process per local GPU, or
any Dask cluster.

    workers = "cores"             # local processes of one CPU thread each, as many at once as cores are free (re-read
                                  # before each run starts: cores another chapter of the build frees are taken up); on
                                  # a machine with CUDA, processes sharing its GPU, as many as `gpu_slots()` allows
    workers = ""                  # serial, in the chapter's process (no extra needed)
    workers = "local:4"           # four local Dask worker processes (one per GPU when there are GPUs; cores divided otherwise)
    workers = "tcp://host:8786"   # a running Dask scheduler: e.g. workers started as SLURM jobs by dask-jobqueue

Dask, not Ray or submitit: its futures are the concurrent.futures interface the grid already speaks, a LocalCluster
gives local workers with no setup, the same code reaches a cluster through a scheduler address, and dask-jobqueue
starts workers as SLURM, PBS, SGE or LSF jobs. Each run keeps its cache key, so a grid resumes and a run is never
computed twice; results come back in grid order, identical to a serial run's.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

import torch

from ..errors import BookError, require
from ..processes import die_with_parent, free_cores
from ..settings import cpu_share, thread_env

RECHECK_S = 5.0  # how often a Cores pool waiting on its runs looks again for freed cores

GPU = "GPU"  # the Dask resource a GPU worker offers and a run asks for


def _one_thread(parent: int) -> None:
    """A pool worker's start: one CPU thread, and it dies with the process that started it (a chapter's kernel that ends
    without shutting its pool down, as one whose runner was killed does, leaves no worker computing)."""
    die_with_parent(parent)
    torch.set_num_threads(1)
    os.environ.update(thread_env(1))


SLOT_GIB = 8  # GPU memory per run side by side on one GPU: a small model's fine-tuning (weights, Adam, activations, context)


def gpu_slots() -> int:
    """Runs one GPU holds side by side: its memory in SLOT_GIB slots (0 without CUDA). Small runs are bound by the host's
    kernel launches, so runs in separate processes fill the GPU where one alone leaves it mostly idle."""
    if not torch.cuda.is_available():
        return 0
    return max(1, torch.cuda.get_device_properties(0).total_memory // (SLOT_GIB * 2**30))


class Cores:
    """Local processes of one CPU thread each (so a run's sums never depend on how many ran beside it), started while
    `free_cores()` leaves room (and, with CUDA, at most `gpu_slots()`): a grid started beside another chapter widens
    when that chapter ends."""

    def __init__(self) -> None:
        self.limit = gpu_slots() or None
        self.executor = ProcessPoolExecutor(
            max_workers=os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn"), initializer=_one_thread, initargs=(os.getpid(),)
        )

    def map(self, function: Callable[..., Any], calls: list[tuple]) -> Iterator[Any]:
        """function(*call) for each call, yielded in the calls' order as soon as each and those before it are done."""
        waiting, running, finished, turn = list(enumerate(calls)), {}, {}, 0
        while turn < len(calls):
            while waiting and len(running) < min(free_cores(), self.limit or os.cpu_count() or 1):
                index, call = waiting.pop(0)
                running[self.executor.submit(function, *call)] = index
            done, _ = wait(list(running), timeout=RECHECK_S, return_when=FIRST_COMPLETED)
            for future in done:
                finished[running.pop(future)] = future
            while turn in finished:
                yield finished.pop(turn).result()
                turn += 1


def results(client: Any | None, function: Callable[..., Any], calls: list[tuple]) -> Iterator[Any]:
    """function(*call) for each call, in the calls' order: here in turn (client None), on local processes (`Cores`) or
    on a Dask client's workers."""
    if client is None:
        return (function(*call) for call in calls)
    if isinstance(client, Cores):
        return client.map(function, calls)
    futures: list[Future] = [submit(client, function, *call) for call in calls]
    return (future.result() for future in futures)


@contextmanager
def pool(workers: str) -> Iterator[Any | None]:
    """What runs the grid for `workers`: None (serial) for ""; a `Cores` pool for "cores" (on a GPU too); a Dask client
    otherwise, closed (with a local cluster) afterwards."""
    if not workers:
        yield None
        return
    if workers == "cores":
        cores = Cores()
        try:
            yield cores
        finally:
            cores.executor.shutdown(wait=True, cancel_futures=True)
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
    require("://" in workers, f"workers={workers!r}: use 'cores', '' (serial), local:N, or a Dask scheduler address such as tcp://host:8786")
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
