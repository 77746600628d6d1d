"""Chapter 06's experiment: what clipping and whitening do to the geometry of every layer. Anisotropy as in chapter 01
(one random non-special token per sentence, disjoint sentence pairs) and self-similarity minus anisotropy (Ethayarajh
2019; Luo et al. 2021, Fig. 6), for each variant and layer; the whitening is fitted on the token vectors of a separate
sample of sentences."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.store import declare
from ..encode import words
from ..encode.collectors import LayerStats, SentenceTokenSampler, TokenReservoir
from ..encode.extraction import extract
from ..encode.models import LoadedModel
from ..measure import geometry, inference
from . import vector_variants
from .outlier_set import OutlierSet
from .vector_variants import CLIPPED, CLIPPED_RANDOM, RAW, WHITENED
from .verdicts import UNTESTABLE, Claim, Outcome, Tables, contextual, decide, from_units, outcome, rule, unit

VARIANTS = [RAW, CLIPPED, CLIPPED_RANDOM, WHITENED]


@dataclass
class Geometry:
    table: pd.DataFrame  # GEOMETRY_BY_VARIANT
    variants: vector_variants.Variants
    tokens: np.ndarray  # the measured sentences' sampled tokens, (sentences, layers, width)
    last_layer: TokenReservoir  # a sample of last-layer token vectors for the PCA views
    fit_tokens: int


def layer_geometry(
    variants: vector_variants.Variants, tokens: np.ndarray, word_vectors: np.ndarray, word_groups: np.ndarray, n_pairs: int, seed: int
) -> pd.DataFrame:
    """Random-pair cosine (mean, 95% half-width), its change from raw on the same pairs (with a paired 95% half-width)
    and self-similarity for every variant and layer."""

    def score(transform, layer: int, variant: str) -> dict:
        cos = geometry.pair_cosines(transform(tokens[:, layer])[:, None, :], n_pairs, seed)[:, 0]
        change = cos - geometry.pair_cosines(tokens[:, layer][:, None, :], n_pairs, seed)[:, 0]
        ss = geometry.self_similarity(transform(word_vectors[:, layer]), word_groups)
        return {
            "mean_cosine": cos.mean(),
            "ci95": 1.96 * cos.std(ddof=1) / np.sqrt(len(cos)),
            "change_vs_raw": change.mean(),
            "change_vs_raw_ci95": 1.96 * change.std(ddof=1) / np.sqrt(len(change)),
            "self_similarity": ss,
            "self_similarity_minus_anisotropy": ss - cos.mean(),
            "clipped_dims": " ".join(map(str, variants.clipped_dims(layer, variant))),
            "whitening_dropped_components": variants.dropped_components(layer),
        }

    return GEOMETRY_BY_VARIANT.check(variants.score(score))


def clipped_cosines(outlier_set: OutlierSet, tokens: np.ndarray, n_pairs: int, seed: int, protocol: str = "model") -> pd.DataFrame:
    """Mean random-pair cosine of the clipped vectors in every layer, and how many dimensions were zeroed there."""
    clipped = vector_variants.fit([CLIPPED], outlier_set, protocol)

    def score(transform, layer: int, variant: str) -> dict:
        cos = geometry.pair_cosines(transform(tokens[:, layer])[:, None, :], n_pairs, seed)[:, 0]
        return {"dims_zeroed": len(clipped.clipped_dims(layer)), "mean_cosine": cos.mean()}

    return clipped.score(score)


def plane_views(run: Geometry, name: str, seed: int) -> tuple[dict, dict, dict]:
    """The last layer's sampled tokens raw and whitened on their first two principal components, keyed "name, variant",
    with each point's position and whether it is a special token."""
    last, sample = run.last_layer.vectors[:, 0], run.last_layer
    points = {RAW: last, WHITENED: run.variants.transforms[WHITENED][run.variants.n_layers - 1].transform(last)}
    keys = {variant: f"{name}, {variant}" for variant in points}
    return (
        {keys[v]: geometry.pca_plane(p, seed=seed) for v, p in points.items()},
        {keys[v]: sample.positions for v in points},
        {keys[v]: sample.special for v in points},
    )


def run(
    lm: LoadedModel,
    measure: list[str],
    fit: list[str],
    word_sentences: list[str],
    word_indices: list[int],
    word_groups: np.ndarray,
    outlier_set: OutlierSet,
    n_pairs: int,
    pca_tokens: int,
    seed: int,
    protocol: str = "model",
) -> Geometry:
    """Fit the whitening on `fit`'s tokens, measure `measure`'s tokens and the words' vectors, score every variant."""
    stats = LayerStats(covariance=True)
    extract(lm, fit, [stats], desc=f"{lm.name} fit")
    fitted = vector_variants.fit(VARIANTS, outlier_set, protocol, token_stats=stats, seed=seed)
    sampler, reservoir = SentenceTokenSampler(seed=seed), TokenReservoir(k=pca_tokens, seed=seed, layers=[lm.n_layers])
    extract(lm, measure, [sampler, reservoir], desc=f"{lm.name} measure")
    tokens = sampler.result()[3]
    word_vectors = words.word_vectors(lm, word_sentences, word_indices, desc=f"{lm.name} words")
    return Geometry(layer_geometry(fitted, tokens, word_vectors, word_groups, n_pairs, seed), fitted, tokens, reservoir, stats.count)


GEOMETRY_BY_VARIANT = declare(
    "06_clipping_whitening",
    "geometry_by_variant",
    "variant layer mean_cosine ci95 change_vs_raw change_vs_raw_ci95 self_similarity self_similarity_minus_anisotropy clipped_dims "
    "whitening_dropped_components",
)


def _changes(t: pd.DataFrame, variant: str) -> pd.DataFrame:
    return contextual(t[t["variant"] == variant]).set_index("layer")


def _clips(frame: pd.DataFrame) -> pd.Series:
    """Whether each row's variant zeroes any dimension (an empty `clipped_dims` is read back from CSV as NaN)."""
    return frame["clipped_dims"].notna() & (frame["clipped_dims"].astype(str).str.strip() != "")


@rule
def clipping_lowers_cosine(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    clipped, control = _changes(t, CLIPPED), _changes(t, CLIPPED_RANDOM)
    clipped = clipped[_clips(clipped)]
    if clipped.empty:
        return Outcome(UNTESTABLE, "nothing is clipped in this model (no model-level outlier dimension)")
    units = []
    for layer, r in clipped.iterrows():
        c = control.loc[layer]
        drop = c["change_vs_raw"] - r["change_vs_raw"]  # how much more clipping lowers the cosine than zeroing random dims
        half = math.hypot(r["change_vs_raw_ci95"], c["change_vs_raw_ci95"])  # ignores their positive correlation: conservative
        units.append(unit(f"layer {layer}", inference.from_interval(drop, drop - half, drop + half, "paired over pairs, vs the random control"), claim.margin))
    control_text = f"zeroing as many random dims changes the mean cosine by {control['change_vs_raw'].min():+.3f} to {control['change_vs_raw'].max():+.3f}"
    return from_units(units, control=control_text)


@rule
def clipping_raises_self_similarity(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    raw, clipped, control = (_changes(t, v)["self_similarity_minus_anisotropy"] for v in (RAW, CLIPPED, CLIPPED_RANDOM))
    if not _clips(_changes(t, CLIPPED)).any():
        return Outcome(UNTESTABLE, "nothing is clipped in this model (no model-level outlier dimension)")
    estimate = inference.mean_t(clipped - raw, "layers (adjacent layers are not independent: too narrow)")
    control_text = f"random control: {(control - raw).mean():+.3f} on average"
    return outcome(decide(estimate, claim.margin), f"self-similarity − anisotropy, clipped minus raw: {estimate.text(3)}", estimate, control_text)
