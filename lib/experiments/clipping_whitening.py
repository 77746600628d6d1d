"""Chapter 06's experiment: what clipping and whitening do to the geometry of every layer. Anisotropy as in chapter 01
(one random non-special token per sentence, disjoint sentence pairs) and self-similarity minus anisotropy (Ethayarajh
2019; Luo et al. 2021, Fig. 6), for each variant and layer; the whitening is fitted on the token vectors of a separate
sample of sentences."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.declaration import chapter
from ..encode import words
from ..encode.collectors import LayerStats, SentenceTokenSampler, TokenReservoir
from ..encode.extraction import extract
from ..encode.models import LoadedModel
from ..measure import geometry, inference
from . import outlier_set, vector_variants
from .outlier_set import OutlierSet
from .vector_variants import CLIPPED, CLIPPED_RANDOM, RAW, WHITENED
from .verdicts import UNTESTABLE, Claim, Outcome, Tables, Unit, contextual, from_units, unit

CHAPTER = chapter("06_clipping_whitening", reads=(outlier_set.CHAPTER,), allowed=vector_variants.ALLOWED)

VARIANTS = [RAW, CLIPPED, CLIPPED_RANDOM, WHITENED]


@dataclass
class Geometry:
    table: pd.DataFrame  # GEOMETRY_BY_VARIANT
    versus_random: pd.DataFrame  # CLIPPING_VS_RANDOM
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


RANDOM_DRAWS = 20  # random control sets averaged over: one draw of a few dimensions is itself a noisy control


def against_random(
    fitted: vector_variants.Variants,
    controls: list[vector_variants.Variants],
    tokens: np.ndarray,
    word_vectors: np.ndarray,
    word_groups: np.ndarray,
    n_pairs: int,
    seed: int,
    outlier_layers: list[int],
) -> pd.DataFrame:
    """Per layer where clipping zeroes dimensions: how much more clipping lowers the mean cosine of random pairs than
    zeroing as many random never-flagged dimensions, averaged over the draws of `controls` (paired over the same pairs),
    and how much more it raises self-similarity minus anisotropy (words and pairs are separate samples: their errors
    add), each with its 95% half-width; `outliers_here`: whether the clipped dimensions are flagged outliers in that
    layer (`OutlierSet.outlier_layers`), the layers the clipping claims are tested in."""
    rows = []
    for layer in range(fitted.n_layers):
        if not fitted.clipped_dims(layer):
            continue

        def measures(transform, layer: int = layer) -> tuple[np.ndarray, np.ndarray]:
            cos = geometry.pair_cosines(transform(tokens[:, layer])[:, None, :], n_pairs, seed)[:, 0]
            return cos, geometry.word_self_similarities(transform(word_vectors[:, layer]), word_groups)

        cos, ss = measures(fitted.transforms[CLIPPED][layer].transform)
        drawn = [measures(c.transforms[CLIPPED_RANDOM][layer].transform) for c in controls]
        cos_random, ss_random = np.mean([d[0] for d in drawn], axis=0), np.mean([d[1] for d in drawn], axis=0)
        drop, words_gain = cos_random - cos, ss - ss_random
        raw_cos = geometry.pair_cosines(tokens[:, layer][:, None, :], n_pairs, seed)[:, 0]
        rows.append(
            {
                "layer": layer,
                "draws": len(controls),
                "raw_mean_cosine": raw_cos.mean(),
                "cosine_drop": drop.mean(),
                "cosine_drop_ci95": inference.Z * drop.std(ddof=1) / np.sqrt(len(drop)),
                "self_similarity_gain": words_gain.mean() + drop.mean(),  # (ss − cos) clipped minus (ss − cos) random
                "self_similarity_gain_ci95": inference.Z * np.hypot(words_gain.std(ddof=1) / np.sqrt(len(words_gain)), drop.std(ddof=1) / np.sqrt(len(drop))),
                "pairs": len(drop),
                "words": len(words_gain),
                "outliers_here": layer in outlier_layers,
            }
        )
    return CLIPPING_VS_RANDOM.frame(rows)


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
    controls = [vector_variants.fit([CLIPPED_RANDOM], outlier_set, protocol, seed=seed + 1 + draw) for draw in range(RANDOM_DRAWS)]
    return Geometry(
        layer_geometry(fitted, tokens, word_vectors, word_groups, n_pairs, seed),
        against_random(fitted, controls, tokens, word_vectors, word_groups, n_pairs, seed, outlier_set.outlier_layers(protocol)),
        fitted,
        tokens,
        reservoir,
        stats.count,
    )


GEOMETRY_BY_VARIANT = CHAPTER.table(
    "geometry_by_variant",
    "variant layer mean_cosine ci95 change_vs_raw change_vs_raw_ci95 self_similarity self_similarity_minus_anisotropy clipped_dims "
    "whitening_dropped_components",
)


CLIPPING_VS_RANDOM = CHAPTER.table(
    "clipping_vs_random",
    "layer draws raw_mean_cosine cosine_drop cosine_drop_ci95 self_similarity_gain self_similarity_gain_ci95 pairs words outliers_here",
)


def _versus_random(tables: Tables, model: str, claim: Claim) -> tuple[pd.DataFrame, str]:
    """The contextual layers a clipping claim is tested in (those where the clipped dimensions are flagged outliers),
    and the layers left out, in words."""
    t = contextual(tables.read(model, claim.chapter, CLIPPING_VS_RANDOM.name))
    left = t.loc[~t["outliers_here"].astype(bool), "layer"]
    note = f"; layer{'s' * (len(left) > 1)} {', '.join(str(int(v)) for v in left)} not testable at this layer (the clipped dims are not outliers there)"
    return t[t["outliers_here"].astype(bool)], note if len(left) else ""


def _unit(name: str, value: float, half: float, n: int, of: str, margin: float) -> Unit:
    return unit(name, inference.from_interval(value, value - half, value + half, f"paired over {n:,} {of}, vs random dims", n, of), margin, of="layers")


NOTHING = "nothing to test: no layer in which the clipped dims are flagged outliers (or no model-level outlier dimension to clip)"


@CHAPTER.rule
def clipping_lowers_cosine(tables: Tables, model: str, claim: Claim) -> Outcome:
    t, left_out = _versus_random(tables, model, claim)
    if t.empty:
        return Outcome(UNTESTABLE, NOTHING)
    room = t[t["raw_mean_cosine"] > claim.margin]
    if room.empty:
        return Outcome(UNTESTABLE, f"the raw mean cosine is already below {claim.margin:g} in every clipped layer: no drop of that size is possible")
    units = [_unit(f"layer {int(r.layer)}", r.cosine_drop, r.cosine_drop_ci95, int(r.pairs), "pairs", claim.margin) for r in room.itertuples()]
    control = f"averaged over {int(t['draws'].iloc[0])} random draws of as many never-flagged dims{left_out}"
    if len(room) < len(t):
        low = ", ".join(str(int(v)) for v in t.loc[t["raw_mean_cosine"] <= claim.margin, "layer"])
        control += f"; layers {low} left out (raw mean cosine already below the margin)"
    return from_units(units, claim, control=control)


@CHAPTER.rule
def clipping_raises_self_similarity(tables: Tables, model: str, claim: Claim) -> Outcome:
    t, left_out = _versus_random(tables, model, claim)
    if t.empty:
        return Outcome(UNTESTABLE, NOTHING)
    units = [
        _unit(f"layer {int(r.layer)}", r.self_similarity_gain, r.self_similarity_gain_ci95, int(r.words), "words (and pairs)", claim.margin)
        for r in t.itertuples()
    ]
    return from_units(units, claim, control=f"clipped minus the mean of {int(t['draws'].iloc[0])} random draws of as many never-flagged dims{left_out}")


def _variant_units(tables: Tables, model: str, claim: Claim, variant: str, layers: pd.Series | None, direction: str) -> list[Unit]:
    """Per contextual layer (those in `layers`, when given), the variant's mean cosine of random token pairs with its
    interval over the pairs."""
    t = contextual(tables.read(model, claim.chapter, GEOMETRY_BY_VARIANT.name))
    t = t[t["variant"] == variant]
    if layers is not None:
        t = t[t["layer"].isin(layers)]
    return [
        unit(
            f"layer {int(r.layer)}",
            inference.from_interval(r.mean_cosine, r.mean_cosine - r.ci95, r.mean_cosine + r.ci95, "over the random pairs"),
            claim.margin,
            direction,
            of="layers",
        )
        for r in t.itertuples()
    ]


@CHAPTER.rule
def clipping_near_isotropic(tables: Tables, model: str, claim: Claim) -> Outcome:
    """After clipping, random tokens are about as close as isotropic vectors would be, in every layer where the clipped
    dims are outliers: the clipped mean cosine below the margin."""
    t, left_out = _versus_random(tables, model, claim)
    if t.empty:
        return Outcome(UNTESTABLE, NOTHING)
    units = _variant_units(tables, model, claim, CLIPPED, t["layer"], "below")
    raw = dict(zip(t["layer"].astype(int), t["raw_mean_cosine"]))
    control = "raw mean cosine " + ", ".join(f"layer {layer}: {value:.2f}" for layer, value in raw.items()) + left_out
    return from_units(units, claim, control=control)


@CHAPTER.rule
def whitening_isotropic(tables: Tables, model: str, claim: Claim) -> Outcome:
    """After whitening, the mean cosine of random tokens is about zero in every contextual layer."""
    units = _variant_units(tables, model, claim, WHITENED, None, "within")
    if not units:
        return Outcome(UNTESTABLE, "no whitened vectors in this run")
    return from_units(units, claim)
