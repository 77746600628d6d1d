"""Frozen features of a labelled task, extracted once and kept in the run cache: every split's mean-pooled sentence
vectors per layer and, when asked, the per-layer mean and covariance of the training tokens (token whitening's fit).

    cache_dir()/features/<key>.npz   one file per (weights, texts, pooling, settings, extraction code)

Chapter 09 reads them; a book build extracts them ahead of it, one (model, task) per job (`lib.edition.features`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..codehash import module_digest
from ..io import write_atomic
from ..provenance import record
from ..settings import cache_dir
from . import attention, collectors, extraction
from .collectors import LayerStats, SentenceMeans
from .extraction import extract
from .models import LoadedModel, weights_digest

TOKEN_SPLITS = ("train", "fit")  # the splits whose tokens the moments are taken over (never development or test texts)


@dataclass(frozen=True)
class TokenMoments:
    """Per layer, the mean (layers, width) and covariance (layers, width, width) of tokens, float64, read as from a
    `LayerStats`."""

    mean: np.ndarray
    stacked_covariance: np.ndarray

    def covariance(self) -> np.ndarray:
        return self.stacked_covariance


@dataclass(frozen=True)
class Features:
    vectors: dict[str, np.ndarray]  # split → (sentences, layers, width) mean-pooled vectors
    moments: TokenMoments | None  # over the TOKEN_SPLITS' tokens; None unless asked for


def _key(lm: LoadedModel, label: str, splits: Mapping[str, Sequence[str]], moments: bool, include_special: bool) -> str:
    """Hash of everything the features depend on: weights, texts, pooling, device and precision, and the code."""
    code = module_digest(extraction, collectors, attention)
    settings = [lm.spec, label, moments, include_special, str(lm.device), str(lm.model.dtype), lm.precision, code]
    digest = hashlib.sha256(json.dumps(settings).encode())
    digest.update(weights_digest(lm).encode())
    for split, texts in splits.items():
        digest.update(json.dumps([split, list(texts)]).encode())
    return digest.hexdigest()[:20]


def task_features(lm: LoadedModel, label: str, splits: Mapping[str, Sequence[str]], moments: bool, include_special: bool = True) -> Features:
    """The features of `splits` (split → texts; empty splits skipped) for `lm`, from the cache when they are there
    (recorded as reused work), else extracted (progress bars named by `label`) and cached. `moments`: also the token
    mean and covariance over the TOKEN_SPLITS."""
    splits = {split: texts for split, texts in splits.items() if len(texts)}
    path = cache_dir() / "features" / f"{_key(lm, label, splits, moments, include_special)}.npz"
    if path.exists():
        record("reused", path, f"frozen features: {lm.name} {label}")
        with np.load(path) as saved:
            vectors = {split: saved[f"vectors_{split}"] for split in splits}
            return Features(vectors, TokenMoments(saved["token_mean"], saved["token_covariance"]) if moments else None)
    stats = LayerStats(covariance=True) if moments else None
    pooled = {split: SentenceMeans(len(texts), include_special=include_special) for split, texts in splits.items()}
    for split, texts in splits.items():
        extra = [stats] if stats is not None and split in TOKEN_SPLITS else []
        extract(lm, texts, [pooled[split], *extra], desc=f"{lm.name} {label} {split}")
    features = Features({split: p.result() for split, p in pooled.items()}, TokenMoments(stats.mean, stats.covariance()) if stats else None)
    arrays = {f"vectors_{split}": v for split, v in features.vectors.items()}
    if features.moments:
        arrays |= {"token_mean": features.moments.mean, "token_covariance": features.moments.stacked_covariance}
    write_atomic(path, lambda tmp: _save(tmp, arrays))
    return features


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with path.open("wb") as f:  # a file object: np.savez would add ".npz" to a temporary file's name
        np.savez(f, **arrays)
