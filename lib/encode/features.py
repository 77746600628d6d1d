"""Frozen features of a labelled task, extracted once and kept in the run cache: every split's mean-pooled sentence
vectors per layer and, when asked, the per-layer mean and covariance of the training tokens (token whitening's fit).

    cache_dir()/features/<key>.npz   one file per part (the fitting texts, the scored texts) of a task's features, keyed
                                     by weights, texts, pooling, settings and extraction code

Chapter 09 reads them; a book build extracts them ahead of it, one part of a model's task per job (`lib.edition.features`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import codegraph
from ..errors import require
from ..io import write_atomic
from ..provenance import record
from ..settings import cache_dir
from .collectors import LayerStats, SentenceMeans
from .extraction import extract
from .models import LoadedModel, weights_digest

FITTING = "fitting"
PARTS = {FITTING: ("train", "fit"), "scoring": ("dev", "test")}  # extracted and cached apart; the token moments are the fitting texts'


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
    moments: TokenMoments | None  # over the fitting texts' tokens; None unless asked for


def _key(lm: LoadedModel, weights: str, label: str, splits: Mapping[str, Sequence[str]], moments: bool, include_special: bool) -> str:
    """Hash of everything the features depend on: weights, texts, pooling, device and precision, and the code."""
    code = codegraph.digest(__name__)  # this module and every lib file it runs
    settings = [lm.spec, label, moments, include_special, str(lm.device), str(lm.model.dtype), lm.precision, code]
    digest = hashlib.sha256(json.dumps(settings).encode())
    digest.update(weights.encode())
    for split, texts in splits.items():
        digest.update(json.dumps([split, list(texts)]).encode())
    return digest.hexdigest()[:20]


def task_features(
    lm: LoadedModel, label: str, splits: Mapping[str, Sequence[str]], moments: bool, include_special: bool = True, parts: Sequence[str] = tuple(PARTS)
) -> Features:
    """The features of `splits` (split → texts; empty splits skipped) for `lm`, part by part (`PARTS`; `parts`: only
    these), each from the cache when it is there (recorded as reused work), else extracted (progress bars named by
    `label`) and cached. `moments`: also the token mean and covariance over the fitting texts."""
    known = [split for part in PARTS.values() for split in part]
    require(set(splits) <= set(known), f"splits {sorted(set(splits) - set(known))}: not among the splits features are kept for ({', '.join(known)})")
    vectors, found, weights = {}, None, weights_digest(lm)  # the weights hashed once for every part
    for part in parts:
        texts = {split: splits[split] for split in PARTS[part] if len(splits.get(split, []))}
        if texts:
            part_vectors, part_moments = _part(lm, weights, label, part, texts, moments and part == FITTING, include_special)
            vectors, found = vectors | part_vectors, found or part_moments
    return Features(vectors, found)


Part = tuple[dict[str, np.ndarray], TokenMoments | None]  # a part's vectors by split, and its token moments


def _part(lm: LoadedModel, weights: str, label: str, part: str, splits: dict[str, Sequence[str]], moments: bool, include_special: bool) -> Part:
    path = cache_dir() / "features" / f"{_key(lm, weights, label, splits, moments, include_special)}.npz"
    if path.exists():
        record("reused", path, f"frozen features: {lm.name} {label} ({part})")
        with np.load(path) as saved:
            return {split: saved[f"vectors_{split}"] for split in splits}, TokenMoments(saved["token_mean"], saved["token_covariance"]) if moments else None
    stats = LayerStats(covariance=True) if moments else None
    pooled = {split: SentenceMeans(len(texts), include_special=include_special) for split, texts in splits.items()}
    for split, texts in splits.items():
        extract(lm, texts, [pooled[split], *([stats] if stats else [])], desc=f"{lm.name} {label} {split}")
    vectors, found = {split: p.result() for split, p in pooled.items()}, TokenMoments(stats.mean, stats.covariance()) if stats else None
    arrays = {f"vectors_{split}": v for split, v in vectors.items()}
    if found:
        arrays |= {"token_mean": found.mean, "token_covariance": found.stacked_covariance}
    write_atomic(path, lambda tmp: _save(tmp, arrays))
    return vectors, found


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with path.open("wb") as f:  # a file object: np.savez would add ".npz" to a temporary file's name
        np.savez(f, **arrays)
