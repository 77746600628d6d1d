"""Chapter 06's experiment: what clipping and whitening do to the geometry of every layer. Anisotropy as in chapter 01
(one random non-special token per sentence, disjoint sentence pairs) and self-similarity minus anisotropy (Ethayarajh
2019; Luo et al. 2021, Fig. 6), for each variant and layer; the whitening is fitted on the token vectors of a separate
sample of sentences."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..core.checks import positive_int, sample_size
from ..core.declaration import chapter
from ..core.store import Writer
from ..datasets.registry import load
from ..datasets.tasks import sst2_sentences
from ..encode import words
from ..encode.collectors import LayerStats, SentenceTokenSampler, TokenReservoir
from ..encode.extraction import extract
from ..encode.models import LoadedModel, load_model
from ..errors import require
from ..measure import geometry, inference
from . import figure_kinds, outlier_set, vector_variants
from .cells import plus_minus
from .outlier_set import OutlierSet
from .vector_variants import CLIPPED, CLIPPED_RANDOM, RAW, WHITENED
from .verdicts import UNTESTABLE, Claim, Outcome, Tables, Unit, contextual, from_units, unit
from .wording import listed, rounded

CHAPTER = chapter("06_clipping_whitening", reads=(outlier_set.CHAPTER,), allowed=vector_variants.ALLOWED)

VARIANTS = [RAW, CLIPPED, CLIPPED_RANDOM, WHITENED]


@dataclass(frozen=True)
class Inputs:
    measure: list[str]  # the sentences measured
    fit: list[str]  # other sentences, the whitening is fitted on their tokens
    word_sentences: list[str]  # per_word sentences for each of n_words words
    word_indices: list[int]  # the word's position in each
    word_groups: np.ndarray  # which word each sentence is for


def inputs(profile: str, n_sentences: int, n_pairs: int, n_fit: int, n_words: int, per_word: int, pca_tokens: int, seed: int) -> Inputs:
    """The chapter's samples (none of chapter 02's outlier-selection sample), its parameters checked first."""
    for name, value in dict(n_pairs=n_pairs, n_fit=n_fit, n_words=n_words, per_word=per_word).items():
        positive_int(name, value)
    sample_size("pca_tokens", pca_tokens, n_sentences)
    drawn = sst2_sentences(n_sentences + n_fit, seed, avoid=outlier_set.selection_sample(profile))
    measure, fit = drawn[:n_sentences], drawn[n_sentences:]
    require(2 * n_pairs <= len(measure), f"{n_pairs} disjoint pairs need at least {2 * n_pairs} sentences; the sample has {len(measure):,}")
    require(
        len(fit) > 1, f"SST-2 has {len(drawn):,} training sentences: none are left to fit the whitening on after n_sentences {n_sentences:,}; ask for fewer"
    )
    train = load("sst2", "train")["sentence"].tolist()
    occurrences = words.word_occurrences(train, n_words, per_word, min_sentences=10, seed=seed)
    print(f"measure {len(measure):,} and fit {len(fit):,} sentences; self-similarity: {n_words} words x {per_word} sentences")
    return Inputs(measure, fit, [train[s] for _, s, _ in occurrences], [w for _, _, w in occurrences], np.repeat(np.arange(n_words), per_word))


@dataclass(frozen=True)
class Geometry:
    table: pd.DataFrame  # GEOMETRY_BY_VARIANT
    versus_random: pd.DataFrame  # CLIPPING_VS_RANDOM
    variants: vector_variants.Variants
    tokens: np.ndarray  # the measured sentences' sampled tokens, (sentences, layers, width)
    last_layer: TokenReservoir  # a sample of last-layer token vectors for the PCA views
    fit_tokens: int
    name: str = ""  # the model's
    clipping: OutlierSet | None = None  # chapter 02's outlier set, clipped


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


def _geometry(
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


def run(
    spec: str,
    samples: Inputs,
    *,
    profile: str,
    clip: str,
    n_pairs: int,
    pca_tokens: int,
    seed: int,
    results: Writer,
    parameters: dict,
    device: str = "auto",
    dtype: str = "auto",
) -> Geometry:
    """One model: anisotropy and self-similarity of every variant and layer, and clipping against random dimensions
    (both tables written)."""
    lm = load_model(spec, device=device, dtype=dtype)
    clipping = outlier_set.outliers_of(lm, spec, profile)
    found = _geometry(
        lm,
        measure=samples.measure,
        fit=samples.fit,
        word_sentences=samples.word_sentences,
        word_indices=samples.word_indices,
        word_groups=samples.word_groups,
        outlier_set=clipping,
        n_pairs=n_pairs,
        pca_tokens=pca_tokens,
        seed=seed,
        protocol=clip,
    )
    info = {"name": lm.name, "n_layers": lm.n_layers, "width": lm.width, "fit_tokens": found.fit_tokens, "clipping_set": clipping.describe()}
    results.table(found.table, GEOMETRY_BY_VARIANT, spec, parameters=parameters, model_info=info)
    results.table(found.versus_random, CLIPPING_VS_RANDOM, spec, parameters=parameters, model_info=info)
    return replace(found, name=lm.name, clipping=clipping)


def transforms_note(runs: dict[str, Geometry], clip: str, n_fit: int) -> str:
    """What is clipped (each model's outlier set), what the whitening is fitted on, and how many directions without
    variance it left out."""
    dropped = []
    for name, r in runs.items():
        w = r.table[r.table["variant"] == WHITENED].set_index("layer")["whitening_dropped_components"]
        left = ", ".join(f"{int(n)} in layer {layer}" for layer, n in w.items() if n > 0)
        dropped.append(f"{name}: {left}" if left else f"{name}: none")
    return (
        "**What is clipped and what is whitened.** Clipping zeroes each model's outlier set"
        + (" in every layer" if clip == "model" else ", per layer, the dimensions flagged in that layer")
        + ":\n\n"
        + "\n".join(f"- {r.clipping.describe()}" for r in runs.values())
        + f"\n\nWhitening is fitted per layer on the token vectors of {n_fit:,} other SST-2 training sentences (the thesis's token-level whitening). "
        + "Directions without variance it leaves out: "
        + "; ".join(dropped)
        + "."
    )


def figure_variants(runs: dict[str, Geometry], results: Writer) -> None:
    """Anisotropy and self-similarity minus anisotropy by layer for every variant, one row per model."""
    fig = vector_variants.variants_by_layer(
        {n: r.table for n, r in runs.items()},
        ["mean_cosine", "self_similarity_minus_anisotropy"],
        ["average cosine of random token pairs", "self-similarity − anisotropy"],
    )
    said = []
    for name, r in runs.items():
        ctx = r.table[r.table["layer"] >= 1]
        cos = ctx.pivot(index="layer", columns="variant", values="mean_cosine")
        ss = ctx.pivot(index="layer", columns="variant", values="self_similarity_minus_anisotropy")
        said.append(
            f"{name}: the highest random-pair cosine is {rounded(cos[RAW].max())} raw and {rounded(cos[CLIPPED].max())} clipped, zeroing random "
            f"dimensions moves it by at most {rounded((cos[CLIPPED_RANDOM] - cos[RAW]).abs().max())}, whitening keeps it within "
            f"{rounded(cos[WHITENED].abs().max())} of zero, and self-similarity minus anisotropy is higher clipped than raw in "
            f"{int((ss[CLIPPED] > ss[RAW]).sum())} of {len(ss)} layers"
        )
    alt = "Over the contextual layers, " + "; ".join(said) + "."
    caption = "Anisotropy and self-similarity minus anisotropy by layer, for the raw, clipped, randomly clipped (control) and whitened vectors."
    results.figure(fig, "anisotropy_self_similarity", caption, alt=alt)


def variant_tables(runs: dict[str, Geometry]) -> dict[str, pd.DataFrame]:
    """Per model: anisotropy and self-similarity minus anisotropy by layer, one column per variant."""
    out = {}
    for name, r in runs.items():
        wide = r.table.pivot(index="layer", columns="variant", values=["mean_cosine", "self_similarity_minus_anisotropy"]).round(3) + 0.0  # + 0.0: no -0.000
        wide.columns = [f"{'cosine' if m == 'mean_cosine' else 'self-sim − aniso'}, {v}" for m, v in wide.columns]
        out[name] = wide.reset_index()
    return out


def versus_random_tables(runs: dict[str, Geometry]) -> dict[str, pd.DataFrame]:
    """Per model and clipped layer: clipping minus zeroing as many random dimensions, with 95% intervals."""
    return {
        name: r.versus_random[["layer", "raw_mean_cosine"]].assign(
            **{
                "cosine drop beyond random dims": plus_minus(r.versus_random["cosine_drop"].round(3) + 0.0, r.versus_random["cosine_drop_ci95"], 3),
                "self-sim − aniso gain beyond random dims": plus_minus(
                    r.versus_random["self_similarity_gain"].round(3) + 0.0, r.versus_random["self_similarity_gain_ci95"], 3
                ),
            }
        )
        for name, r in runs.items()
    }


def figure_whitening_planes(runs: dict[str, Geometry], seed: int, results: Writer) -> None:
    views, positions, special = {}, {}, {}
    for name, r in runs.items():
        for shown, new in zip((views, positions, special), plane_views(r, name, seed)):
            shown.update(new)
    fig = figure_kinds.plane_views(views, positions, "position in sentence", special=special)
    alt = "; ".join(
        f"{key}: the mean vector is {view.mean_vector_norm_ratio:.2f} times the average vector's length and the first two components hold "
        f"{100 * view.explained[0]:.1f}% and {100 * view.explained[1]:.1f}% of the variance"
        for key, view in views.items()
    )
    caption = "Token vectors on their first two principal components before and after whitening, coloured by position."
    results.figure(fig, "pca_before_after_whitening", caption, alt=f"Last layer, {alt}.")


def findings(runs: dict[str, Geometry]) -> list[str]:
    """What our run shows: per model, the contextual layers' cosine for each variant, and self-similarity after clipping."""
    lines = []
    for name, r in runs.items():
        t = r.table
        ctx = t[t["layer"] >= 1].pivot(index="layer", columns="variant", values="mean_cosine")
        ss = t[t["layer"] >= 1].pivot(index="layer", columns="variant", values="self_similarity_minus_anisotropy")
        drop = ctx["raw"] - ctx["clipped"]
        cos, s = ctx.mean().map(rounded), ss.mean().map(rounded)
        lines.append(
            f"- **{name}**: over the contextual layers, mean random-pair cosine {cos['raw']} raw, {cos['clipped']} clipped, "
            f"{cos['clipped-random']} with as many random dimensions zeroed, "
            f"{cos['whitened']} whitened (largest drop from clipping {rounded(drop.max())}, layer {int(drop.idxmax())}). "
            f"Self-similarity − anisotropy is higher after clipping than raw in {int((ss['clipped'] > ss['raw']).sum())} of {len(ss)} layers "
            f"(mean {s['raw']} raw, {s['clipped']} clipped, {s['whitened']} whitened)."
        )
    return lines


def answer(runs: dict[str, Geometry]) -> list[str]:
    """The chapter's answer: in how many of the layers where the clipped dimensions are outliers clipping lowers the
    random-pair cosine and raises self-similarity minus anisotropy beyond zeroing as many random dimensions (95%
    intervals; the largest effect and its layer), and how close whitening brings the cosine to zero."""
    tested = {name: r.versus_random[r.versus_random["outliers_here"].astype(bool)] for name, r in runs.items()}
    tested = {name: t for name, t in tested.items() if len(t)}

    def beyond(column: str) -> tuple[str, str]:
        """In how many layers per model the effect's interval is above zero, and the largest effect with its layer."""
        counts = listed([f"{int((t[column] - t[f'{column}_ci95'] > 0).sum())} of {len(t)}" for t in tested.values()])
        tops = [t.loc[t[column].idxmax()] for t in tested.values()]
        return counts, listed([f"{top[column]:.3f} ± {top[f'{column}_ci95']:.3f} in layer {int(top['layer'])}" for top in tops])

    whitened = {name: contextual_whitened(r) for name, r in runs.items()}
    near = rounded(max(float(w["mean_cosine"].abs().max()) for w in whitened.values()))
    lines = [f"Whitening keeps the mean cosine of random token pairs within {near} of zero in every contextual layer, as it is built to."]
    if not tested:
        return ["No model has a layer where its clipped dimensions are outliers: there is nothing for clipping to remove.", *lines]
    first = next(iter(tested.values()))
    (drops, largest), (gains, most) = beyond("cosine_drop"), beyond("self_similarity_gain")
    return [
        f"Clipping the outlier dimensions lowers the mean cosine of random token pairs more than zeroing as many random dimensions does in "
        f"{drops} layers where they are outliers ({listed(list(tested))}; largest drops {largest}, 95% intervals over "
        f"{int(first['pairs'].iloc[0]):,} pairs).",
        f"It raises self-similarity minus anisotropy beyond that control in {gains} of those layers (largest gains {most}; "
        f"{int(first['words'].iloc[0]):,} words).",
        *lines,
    ]


def contextual_whitened(run: Geometry) -> pd.DataFrame:
    """The whitened vectors' rows of the geometry table, contextual layers only."""
    return run.table[(run.table["variant"] == WHITENED) & (run.table["layer"] >= 1)]


def whitened_covers_zero(runs: dict[str, Geometry]) -> str:
    """Exercise ex-06-read: in how many contextual layers the whitened cosine's 95% interval contains zero."""
    lines = []
    for name, r in runs.items():
        w = contextual_whitened(r)
        covers = ((w["mean_cosine"] - w["ci95"]) <= 0) & (0 <= (w["mean_cosine"] + w["ci95"]))
        lines.append(
            f"- **{name}**: the interval contains 0 in {int(covers.sum())} of {len(w)} contextual layers (largest distance from 0: "
            f"{rounded(w['mean_cosine'].abs().max())})."
        )
    return (
        "\n".join(lines) + "\n\nThe whitening was fitted on other sentences than the ones measured, so their mean is not exactly the "
        "fitted mean; the small remaining cosine is that sampling difference."
    )


def at_thresholds(run: Geometry, thresholds: tuple[float, ...], n_pairs: int, seed: int, clip: str) -> pd.DataFrame:
    """Exercise ex-06-clip: the clipped cosine per contextual layer with chapter 02's average vectors read at each threshold."""
    at = {z: clipped_cosines(run.clipping.with_threshold(z), run.tokens, n_pairs, seed=seed, protocol=clip) for z in thresholds}
    both = pd.concat({f"at {z:g}": t.set_index("layer")[["dims_zeroed", "mean_cosine"]] for z, t in at.items()}, axis=1)
    both.columns = [f"{m.replace('_', ' ')} {z}" for z, m in both.columns]
    return both.reset_index().query("layer >= 1")


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
