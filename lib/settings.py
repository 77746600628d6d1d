"""Where things live (data, cache, results, models) and which device computes."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from .errors import BookError

REPO_ROOT = Path(__file__).resolve().parent.parent


def _path_from_env(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    path = Path(value).expanduser() if value else default
    return path if path.is_absolute() else (Path.cwd() / path)


def data_dir() -> Path:
    """Data sets: $BOOK_DATA_DIR, default `data/` in the repository."""
    return _path_from_env("BOOK_DATA_DIR", REPO_ROOT / "data").resolve()


def cache_dir() -> Path:
    """Assembled model weights and other re-creatable files: $BOOK_CACHE_DIR."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "embedding-geometry-book"
    return _path_from_env("BOOK_CACHE_DIR", default).resolve()


def results_dir() -> Path:
    """Tables and figures the chapters write: $BOOK_RESULTS_DIR, default `results/`."""
    return _path_from_env("BOOK_RESULTS_DIR", REPO_ROOT / "results").resolve()


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


DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def torch_dtype(name: str) -> torch.dtype:
    """Map a dtype name from a parameter cell to torch."""
    if name not in DTYPES:
        raise BookError(f"unknown dtype {name!r}; choose one of {', '.join(DTYPES)}")
    return DTYPES[name]
