"""Where things live (data, cache, results, models) and which device computes."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

import torch

from .errors import BookError

REPO_ROOT = Path(__file__).resolve().parent.parent


def _path_from_env(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    path = Path(value).expanduser() if value else default
    return path if path.is_absolute() else (Path.cwd() / path)


def data_dir() -> Path:
    """Data sets: $BOOK_DATA_DIR, default `data/` in the repository; one line when it names a file (or a path through one)."""
    path = _path_from_env("BOOK_DATA_DIR", REPO_ROOT / "data").resolve()
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise BookError(
            f"BOOK_DATA_DIR={os.environ.get('BOOK_DATA_DIR')!r}: {existing} is a file, not a folder; point BOOK_DATA_DIR at the folder that holds "
            "(or will hold) the data sets, or unset it for data/ in the repository"
        )
    return path


class DataRelease(NamedTuple):
    name: str
    sha256: str


# The data release (`python -m lib.datasets pack`): every pinned file in one deterministic archive. The book fetches each
# file from its public commit (lib/datasets/fetch.py); an archive is an optional mirror named with $BOOK_DATA_URL, and
# this SHA-256 says whether it is the book's (the host does not matter).
DATA_RELEASE = DataRelease(name="book-data-v2.tar.gz", sha256="47fa0c6316ff7a6ff6fd4e2af58530907c7c6e63b9ada0e3be397f0a38c54bb0")


def cache_dir() -> Path:
    """Assembled model weights and other re-creatable files: $BOOK_CACHE_DIR."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "embedding-geometry-book"
    return _path_from_env("BOOK_CACHE_DIR", default).resolve()


def results_dir() -> Path:
    """Tables and figures the chapters write: $BOOK_RESULTS_DIR, default `results/`."""
    return _path_from_env("BOOK_RESULTS_DIR", REPO_ROOT / "results").resolve()


STAGING = "BOOK_RESULTS_STAGING"  # set by the book build while it executes a chapter


def output_dir() -> Path:
    """Where the running chapter writes its tables and figures: while the book build executes a chapter, a fresh folder
    of its own ($BOOK_RESULTS_STAGING), which replaces the chapter's results only when the chapter succeeds; otherwise
    the results folder itself. Other chapters' results are always read from `results_dir()`."""
    staging = os.environ.get(STAGING)
    return Path(staging).resolve() if staging else results_dir()


def slug(text: str) -> str:
    """A folder-safe name for a model spec or table name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


def models_dir() -> Path:
    """Models the book trains itself: $BOOK_MODELS_DIR, default `models/`."""
    return _path_from_env("BOOK_MODELS_DIR", REPO_ROOT / "models").resolve()


def build_dir() -> Path:
    """Editions (executed notebooks, cache entries, HTML), one folder per profile: $BOOK_BUILD_DIR, default `_build/`."""
    return _path_from_env("BOOK_BUILD_DIR", REPO_ROOT / "_build").resolve()


def pick_device(name: str = "auto") -> torch.device:
    """`auto` picks CUDA when present, else CPU; `cpu`/`cuda`/`cuda:1` are taken as given."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise BookError(f"device {name!r} was asked for but CUDA is not available here; use device='auto' or 'cpu'")
    try:
        return torch.device(name)
    except RuntimeError as err:
        raise BookError(f"unknown device {name!r}; use 'auto', 'cpu' or 'cuda'") from err


DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "auto": torch.float32}


def torch_dtype(name: str) -> torch.dtype:
    """Map a dtype name from a parameter cell to the weights' torch dtype ("auto": float32 weights, see `autocast_precision`)."""
    if name not in DTYPES:
        raise BookError(f"unknown dtype {name!r}; choose one of {', '.join(DTYPES)}")
    return DTYPES[name]


def native_bf16(device: torch.device) -> bool:
    """Whether the hardware computes bfloat16 natively: a CUDA GPU with bf16, or a CPU with AVX-512 BF16 or AMX."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return any(getattr(torch.cpu, probe, lambda: False)() for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"))


def autocast_precision(dtype: str, device: torch.device) -> str:
    """ "bfloat16" when dtype is "auto" and the hardware computes bf16 natively, else "none". Matrix products then run in
    bf16 under autocast while the weights, LayerNorm, softmax, losses and every collected statistic stay float32: about 2×
    faster MPNet passes on this CPU, and the STS-B Spearman × 100 of every MPNet layer moved by at most 0.03."""
    torch_dtype(dtype)
    return "bfloat16" if dtype == "auto" and native_bf16(device) else "none"


def autocast(precision: str, device: torch.device) -> torch.autocast:
    """Context for a forward pass in the given precision ("bfloat16" or "none")."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bfloat16")


def cpu_share(parts: int) -> int:
    """CPU threads for each of `parts` processes sharing this machine (at least 1)."""
    return max(1, (os.cpu_count() or 1) // parts)


def thread_env(threads: int) -> dict[str, str]:
    """Environment that holds a new process's torch, OpenMP and BLAS threads to `threads`."""
    return {name: str(threads) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
