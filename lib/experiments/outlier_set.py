"""The model's outlier dimensions, detected once (chapter 02's criterion and sample) and used unchanged by every chapter
that clips or ranks them, as Luo et al. zero one fixed set of outlier dimensions per model (their values: `paper_values.yaml`).

`statistics` is chapter 02's pass over its sample; `reference` reads the average vectors chapter 02 wrote for a model
(`mean_vectors.csv`, its criterion from `meta.json`), or, when chapter 02 has not run on that model in this edition,
recomputes them with the same pass, sample and criterion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..core import store
from ..core.profiles import chapter_parameters
from ..datasets.tasks import sample_sentences
from ..encode.collectors import LayerStats
from ..encode.extraction import extract
from ..encode.models import LoadedModel
from ..errors import BookError, require
from ..measure import outliers
from ..provenance import is_vouched, record

CHAPTER = "02_outlier_neurons"
SOURCE_TABLE = "mean_vectors"  # chapter 02's average vectors, the reference every chapter that clips reads
OUTLIER_COLUMNS = "dim sign max_abs_z layers n_layers model_outlier"  # a table of detected dimensions (chapters 02 and 05)


@dataclass(frozen=True)
class Criterion:
    """Chapter 02's outlier criterion and sample: |robust z| >= z_threshold in at least min_layer_share of the contextual
    layers' average vectors, over n_sentences SST-2 training sentences drawn with seed."""

    z_threshold: float
    min_layer_share: float
    n_sentences: int
    seed: int

    def describe(self) -> str:
        return f"|robust z| ≥ {self.z_threshold:g} in ≥ {self.min_layer_share:.0%} of the contextual layers, {self.n_sentences:,} SST-2 sentences"


@dataclass
class OutlierSet:
    """One model's reference average vectors (layers, width) and the criterion they are read with."""

    model: str
    mean: np.ndarray
    criterion: Criterion
    source: str  # where the average vectors come from, for the page

    @property
    def detected(self) -> pd.DataFrame:
        """Dimensions flagged in any layer, model-level outliers first (`outliers.detect_outliers`)."""
        return outliers.detect_outliers(self.mean, self.criterion.z_threshold, self.criterion.min_layer_share)

    @property
    def dims(self) -> np.ndarray:
        """The model-level outlier dimensions: the clipping set."""
        found = self.detected
        return found.loc[found["model_outlier"], "dim"].to_numpy(dtype=int)

    @property
    def signs(self) -> list[str]:
        found = self.detected
        return found.loc[found["model_outlier"], "sign"].tolist()

    def flags(self, protocol: str = "model") -> np.ndarray:
        """(layers, width) bool: what clipping zeroes per layer (`outliers.clip_flags`)."""
        return outliers.clip_flags(self.mean, self.criterion.z_threshold, self.criterion.min_layer_share, protocol)

    def outlier_layers(self, protocol: str = "model") -> list[int]:
        """The contextual layers in which at least one dimension clipping zeroes is itself a flagged outlier (chapter
        02's criterion, read per layer): where a clipping or whitening claim can be tested. Elsewhere clipping removes
        nothing that stands out (a last layer whose LayerNorm zeroes those dimensions, say)."""
        here = outliers.flagged(self.mean, self.criterion.z_threshold) & self.flags(protocol)
        return [int(layer) for layer in np.flatnonzero(here.any(axis=1)) if layer >= 1]

    def with_threshold(self, z_threshold: float) -> OutlierSet:
        """The same average vectors read with another z threshold (what-if: a stricter or looser criterion)."""
        return replace(self, criterion=replace(self.criterion, z_threshold=z_threshold))

    def describe(self) -> str:
        dims = ", ".join(map(str, self.dims)) or "none"
        return f"{self.model}: dims {dims} ({self.source}; {self.criterion.describe()})"


def statistics(lm: LoadedModel, sentences: list[str], covariance: bool = False, also: Sequence = ()) -> LayerStats:
    """Chapter 02's pass: per layer the mean of every token vector (special tokens included) and the extreme counts;
    `also`: further collectors fed in the same pass."""
    stats = LayerStats(covariance=covariance)
    extract(lm, sentences, [stats, *also], desc=f"{lm.name} outlier statistics")
    return stats


def mean_table(mean: np.ndarray) -> pd.DataFrame:
    """Average vectors (layers, width) as the long table chapter 02 writes: layer, dim, mean."""
    layers, width = mean.shape
    return pd.DataFrame({"layer": np.repeat(np.arange(layers), width), "dim": np.tile(np.arange(width), layers), "mean": mean.ravel()})


def _from_table(frame: pd.DataFrame) -> np.ndarray:
    layers, width = int(frame["layer"].max()) + 1, int(frame["dim"].max()) + 1
    require(len(frame) == layers * width, "chapter 02's mean_vectors table is incomplete; run chapter 02 again")
    return frame.sort_values(["layer", "dim"])["mean"].to_numpy(dtype=np.float64).reshape(layers, width)


def reference(lm: LoadedModel, spec: str, profile: str, criterion: Criterion, root: Path | None = None) -> OutlierSet:
    """The model's outlier set: chapter 02's average vectors for this model and edition when it wrote them (with the
    criterion it recorded), else the same statistics recomputed on chapter 02's sample. Either way the files are recorded
    as inputs, so a chapter that used them runs again when chapter 02 changes them."""
    table, meta = store.table_path(profile, spec, CHAPTER, SOURCE_TABLE, root), store.meta_path(profile, spec, CHAPTER, root)
    record("results", table, f"chapter 02's average vectors of {spec} ({profile})")
    record("results", meta, f"chapter 02's outlier criterion for {spec} ({profile})")
    if is_vouched(table) and is_vouched(meta):
        recorded = store.recorded_parameters(profile, spec, CHAPTER, root)
        try:
            used = Criterion(float(recorded["z_threshold"]), float(recorded["min_layer_share"]), int(recorded["n_sentences"]), int(recorded["seed"]))
            mean = _from_table(pd.read_csv(table))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise BookError(f"{table.parent}: chapter 02's results cannot be read ({err}); run chapter 02 again or delete that folder") from None
        require(
            mean.shape == (lm.n_layers + 1, lm.width),
            f"{table} holds {mean.shape[0]} layers × {mean.shape[1]} dims but {lm.name} has {lm.n_layers + 1} × {lm.width}: "
            "run chapter 02 again for this model",
        )
        return OutlierSet(lm.name, mean, used, "chapter 02's results")
    sentences = sample_sentences("sst2", "train", criterion.n_sentences, criterion.seed)
    mean = statistics(lm, sentences).mean
    return OutlierSet(lm.name, mean, criterion, "recomputed as chapter 02 would: it has not run on this model in this edition")


def outlier_criterion(profile: str) -> Criterion:
    """Chapter 02's outlier criterion and sample in this edition: the one definition of an outlier dimension."""
    p = chapter_parameters(CHAPTER, profile)
    return Criterion(float(p["z_threshold"]), float(p["min_layer_share"]), int(p["n_sentences"]), int(p["seed"]))


def selection_sample(profile: str) -> tuple[int, int]:
    """The (n_sentences, seed) of the SST-2 sample chapter 02 selects the outlier dimensions on in this edition: the
    sample a chapter that measures what clipping them does must avoid (`sample_sentences(avoid=...)`), so that the
    selection and the measurement are separate samples."""
    criterion = outlier_criterion(profile)
    return criterion.n_sentences, criterion.seed


def outliers_of(lm: LoadedModel, spec: str, profile: str) -> OutlierSet:
    """The model's outlier set in this edition (chapter 02's results, or recomputed as chapter 02 would); a chapter shows
    it with `describe`."""
    return reference(lm, spec, profile, outlier_criterion(profile))
