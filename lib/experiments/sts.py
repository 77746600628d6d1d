"""Chapter 08's experiment: sentence similarity without training (Luo et al. 2021, §4.3; thesis Table 4.2). Each
layer's token vectors are mean-pooled into sentence vectors, a pair is scored by the cosine of its two vectors, and
the score is the Spearman correlation (× 100) with the human scores; the paper reports the best contextual layer.

The transforms are fitted on a training sample (the STS-B training sentences), never on the sentences scored."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..encode.collectors import LayerStats, SentenceMeans
from ..encode.extraction import extract
from ..encode.models import LoadedModel
from ..measure import geometry, metrics
from . import variants as variants_
from .outlier_set import OutlierSet
from .schemas import STS_BEST, STS_BY_LAYER


@dataclass
class StsRun:
    table: pd.DataFrame  # STS_BY_LAYER
    fit_sentences: int
    fit_tokens: int


@dataclass
class Encoded:
    """Every distinct sentence of the scored sets encoded once: pooled vectors (n, layers, width), and per data set the
    row of each pair's two sentences, the gold scores and the subsets."""

    vectors: np.ndarray
    pairs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def encode_pairs(lm: LoadedModel, pairs: dict[str, pd.DataFrame], pool_special: bool) -> Encoded:
    """Pool every distinct sentence of the data sets once (a sentence shared by several sets is encoded once)."""
    sentences = pd.unique(pd.concat([f[c] for f in pairs.values() for c in ("sentence1", "sentence2")])).tolist()
    where = {s: i for i, s in enumerate(sentences)}
    pooled = SentenceMeans(len(sentences), include_special=pool_special)
    extract(lm, sentences, [pooled], desc=f"{lm.name}, {len(sentences):,} sentences of {len(pairs)} data sets")
    rows = {
        name: (frame["sentence1"].map(where).to_numpy(), frame["sentence2"].map(where).to_numpy(), frame["score"].to_numpy(), frame["subset"].to_numpy())
        for name, frame in pairs.items()
    }
    return Encoded(pooled.result(), rows)


def spearman_table(variants: variants_.Variants, encoded: Encoded, labels: dict[str, str]) -> pd.DataFrame:
    """Spearman × 100 of every data set, variant and layer: pooled over all pairs, and averaged over the set's subsets."""

    def score(transform, layer: int, variant: str) -> list[dict]:
        y = transform(encoded.vectors[:, layer])
        rows = []
        for name, (a, b, gold, subsets) in encoded.pairs.items():
            cos = geometry.row_cosines(y[a], y[b])
            per_subset = [metrics.spearman_x100(cos[subsets == s], gold[subsets == s]) for s in np.unique(subsets) if (subsets == s).sum() > 2]
            rows.append(
                {
                    "dataset": labels[name],
                    "spearman_x100": metrics.spearman_x100(cos, gold),
                    "subset_mean_spearman_x100": np.mean(per_subset) if per_subset else np.nan,
                    "n_pairs": len(a),
                    "n_sentences": len(np.unique(np.concatenate([a, b]))),
                }
            )
        return rows

    table = variants.score(score)
    return STS_BY_LAYER.check(table[list(STS_BY_LAYER.columns)])


def best_layers(table: pd.DataFrame, model: str, spec: str) -> pd.DataFrame:
    """Per data set and variant: the best contextual layer (1…L, as the paper searches), its score pooled over all pairs
    and averaged over the set's subsets, and the embedding output's score (layer 0) beside it."""
    contextual = table[table["layer"] >= 1]
    top = contextual.loc[contextual.groupby(["dataset", "variant"], sort=False)["spearman_x100"].idxmax()]
    layer0 = table[table["layer"] == 0].set_index(["dataset", "variant"])["spearman_x100"]
    top = top.assign(model=model, spec=spec, embedding_output_spearman_x100=[layer0.get((d, v), np.nan) for d, v in zip(top["dataset"], top["variant"])])
    return STS_BEST.check(top[list(STS_BEST.columns)].reset_index(drop=True))


def run(
    lm: LoadedModel,
    pairs: dict[str, pd.DataFrame],
    labels: dict[str, str],
    fit_sentences: list[str],
    outlier_set: OutlierSet,
    wanted: list[str],
    pool_special: bool = True,
    protocol: str = "model",
) -> StsRun:
    """Fit the variants on the training sentences (token moments and pooled vectors in one pass), then score every set."""
    stats, fit_pooled = LayerStats(covariance="whitened" in wanted), SentenceMeans(len(fit_sentences), include_special=pool_special)
    extract(lm, fit_sentences, [stats, fit_pooled], desc=f"{lm.name}, {len(fit_sentences):,} training sentences (fit)")
    fitted = variants_.fit(wanted, outlier_set, protocol, token_stats=stats, sentence_vectors=fit_pooled.result())
    table = spearman_table(fitted, encode_pairs(lm, pairs, pool_special), labels)
    return StsRun(table, len(fit_sentences), stats.count)
