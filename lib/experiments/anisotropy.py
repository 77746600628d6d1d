"""Chapter 01: how similar the token vectors of one layer are (anisotropy), and whether that is more than a shared
mean: its table, figure and verdict rule."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core.checks import positive_int, sample_size
from ..core.declaration import chapter
from ..core.store import Writer
from ..datasets.tasks import sst2_sentences
from ..encode.collectors import SentenceTokenSampler, TokenReservoir
from ..encode.extraction import extract
from ..encode.models import layer_index, load_model
from ..errors import require
from ..measure import geometry, inference
from . import figure_kinds, outlier_set, plotting
from .plotting import COLORS
from .verdicts import Claim, Outcome, Tables, contextual, from_units, unit

CHAPTER = chapter("01_anisotropy", reads=(outlier_set.CHAPTER,))


def inputs(profile: str, n_sentences: int, n_pairs: int, pca_tokens: int, seed: int) -> list[str]:
    """The chapter's sentences (none of chapter 02's outlier-selection sample), its parameters checked first."""
    sentences = sst2_sentences(n_sentences, seed, avoid=outlier_set.selection_sample(profile))
    positive_int("n_pairs", n_pairs)
    sample_size("pca_tokens", pca_tokens, n_sentences)
    require(
        2 * n_pairs <= len(sentences),
        f"{n_pairs} disjoint pairs need at least {2 * n_pairs} sentences; the sample has {len(sentences):,} (n_sentences {n_sentences:,})",
    )
    return sentences


@dataclass(frozen=True)
class AnisotropyRun:
    name: str  # the model's
    info: dict  # layers, width, the PCA view's layer
    table: pd.DataFrame  # ANISOTROPY
    view: geometry.PlaneView  # the sampled tokens of the PCA layer on their top two components
    positions: np.ndarray  # each sampled token's position in its sentence
    special: np.ndarray  # which sampled tokens are special tokens
    vectors: np.ndarray  # one sampled token per sentence, every layer (sentences, layers, width)


def run(
    spec: str,
    sentences: list[str],
    *,
    n_pairs: int,
    pca_tokens: int,
    pca_layer: int,
    seed: int,
    results: Writer,
    parameters: dict,
    device: str = "auto",
    dtype: str = "auto",
) -> AnisotropyRun:
    """One model: one random token per sentence in every layer (the mean cosine of disjoint pairs, written) and a
    uniform sample of tokens of one layer for the PCA view."""
    lm = load_model(spec, device=device, dtype=dtype)
    layer = layer_index(lm, pca_layer)
    sampler = SentenceTokenSampler(seed=seed)
    reservoir = TokenReservoir(k=pca_tokens, seed=seed, layers=[layer])
    extract(lm, sentences, [sampler, reservoir], desc=f"{lm.name}")
    _, _, _, vectors = sampler.result()
    table = geometry.anisotropy_table(geometry.pair_cosines(vectors, n_pairs, seed), geometry.pair_cosines(geometry.centered(vectors), n_pairs, seed))
    info = {"name": lm.name, "n_layers": lm.n_layers, "width": lm.width, "pca_layer": layer}
    results.table(table, ANISOTROPY, spec, parameters=parameters, model_info=info)
    view = geometry.pca_plane(reservoir.vectors[:, 0, :], seed=seed)
    return AnisotropyRun(lm.name, info, table, view, reservoir.positions, reservoir.special, vectors)


def by_layer_table(runs: dict[str, AnisotropyRun]) -> pd.DataFrame:
    """The mean cosine by layer, one column per model."""
    return pd.concat({name: r.table.set_index("layer")["mean_cosine"] for name, r in runs.items()}, axis=1).reset_index()


PAPER_LEVEL = 0.5  # Luo et al. (2021), §4.1: RoBERTa-base's average cosine of random words lies above it after the first non-input layer


def answer(runs: dict[str, AnisotropyRun]) -> list[str]:
    """The chapter's answer: in how many contextual layers random pairs are closer than orthogonal (95% interval above
    zero), where the shared direction is strongest (with its interval), and how that compares with the paper's level."""
    closer, peaks, everywhere, below = [], [], True, True
    for name, r in runs.items():
        c = r.table[r.table["layer"] >= 1]
        top = c.loc[c["mean_cosine"].idxmax()]
        closer.append(f"{int((c['ci95_low'] > 0).sum())} of {len(c)}{'' if closer else ' layers'} of {name}")
        peaks.append(f"{top['mean_cosine']:.3f} ({top['ci95_low']:.3f} to {top['ci95_high']:.3f}) in layer {int(top['layer'])} of {name}")
        everywhere &= bool((c["ci95_low"] > 0).all())
        below &= bool((c["ci95_high"] < PAPER_LEVEL).all())
    pairs = int(next(iter(runs.values())).table["n_pairs"].iloc[0])
    paper = f"the {PAPER_LEVEL:g} the paper reports for RoBERTa-base"
    return [
        f"{'In every contextual layer' if everywhere else 'In some contextual layers only'}, token vectors share a direction: two random tokens from "
        f"different sentences have a mean cosine above zero, 95% interval included, in {' and '.join(closer)} ({pairs:,} pairs per layer).",
        f"It peaks at {' and '.join(peaks)}, " + (f"every interval below {paper}." if below else f"against {paper}."),
    ]


def findings(runs: dict[str, AnisotropyRun]) -> list[str]:
    """What our run shows: per model, the embedding output and the range over the contextual layers."""
    lines = []
    for name, r in runs.items():
        t = r.table
        contextual = t[t["layer"] >= 1]
        top = contextual.loc[contextual["mean_cosine"].idxmax()]
        low = contextual.loc[contextual["mean_cosine"].idxmin()]
        lines.append(
            f"- **{name}** ({r.info['n_layers']} layers, {r.info['width']} dimensions): the embedding output has mean "
            f"cosine {t['mean_cosine'].iloc[0]:.3f}; across the contextual layers it ranges from {low['mean_cosine']:.3f} "
            f"(layer {int(low['layer'])}) to {top['mean_cosine']:.3f} (layer {int(top['layer'])}); "
            f"{int((contextual['ci95_low'] > PAPER_LEVEL).sum())} of {len(contextual)} contextual layers lie clearly above {PAPER_LEVEL:g}."
        )
    return lines


def pca_lines(runs: dict[str, AnisotropyRun]) -> str:
    """The PCA view in numbers: the mean vector's length relative to the average length, and the variance shown."""
    return "\n".join(
        f"- **{name}**, layer {r.info['pca_layer']}: |mean| / mean |x| = {r.view.mean_vector_norm_ratio:.2f}; "
        f"the first two components explain {100 * r.view.explained.sum():.1f}% of the variance."
        for name, r in runs.items()
    )


def layer_order(runs: dict[str, AnisotropyRun]) -> str:
    """Exercise ex-01-read: the most anisotropic contextual layer against the runner-up, and whether their bands overlap."""
    lines = []
    for name, r in runs.items():
        ranked = r.table[r.table["layer"] >= 1].sort_values("mean_cosine", ascending=False)
        if len(ranked) < 2:
            continue
        first, second = ranked.iloc[0], ranked.iloc[1]
        apart = first["ci95_low"] > second["ci95_high"]
        lines.append(
            f"- **{name}**: layer {int(first['layer'])} ({first['mean_cosine']:.3f}, band {first['ci95_low']:.3f}-{first['ci95_high']:.3f}) "
            f"leads layer {int(second['layer'])} ({second['mean_cosine']:.3f}, band {second['ci95_low']:.3f}-{second['ci95_high']:.3f}): "
            + ("the bands do not overlap, so the order is clear." if apart else "the bands overlap, so this sample cannot order the two layers.")
        )
    return "In this edition's run:\n\n" + "\n".join(lines)


def band_widths(runs: dict[str, AnisotropyRun], pairs: int = 250) -> str:
    """Exercise ex-01-pairs: each model's mean 95% half-width now, and with `pairs` pairs (1/√n)."""
    return "\n".join(
        f"- **{name}**: mean half-width {((r.table['ci95_high'] - r.table['ci95_low']) / 2).mean():.4f} with {int(r.table['n_pairs'].iloc[0])} pairs, "
        f"so about {((r.table['ci95_high'] - r.table['ci95_low']) / 2).mean() * (int(r.table['n_pairs'].iloc[0]) / pairs) ** 0.5:.4f} with {pairs}."
        for name, r in runs.items()
    )


def figure_by_layer(runs: dict[str, AnisotropyRun], results: Writer) -> None:
    caption = "Anisotropy by layer: the average cosine between random pairs of token vectors of different sentences, per model."
    results.figure(_anisotropy_by_layer({name: r.table for name, r in runs.items()}), "anisotropy_by_layer", caption, alt=by_layer_alt(runs))


def by_layer_alt(runs: dict[str, AnisotropyRun]) -> str:
    """What the by-layer figure shows, in numbers: each model's curve from the embedding output to its peak and last layer."""
    curves = []
    for name, r in runs.items():
        t = r.table.set_index("layer")["mean_cosine"]
        peak = t.iloc[1:].idxmax() if len(t) > 1 else t.index[0]
        curves.append(f"{name} from {t.iloc[0]:.3f} at the embedding output to {t[peak]:.3f} in layer {peak}, then {t.iloc[-1]:.3f} in its last layer")
    return "Mean cosine of random token pairs by layer: " + "; ".join(curves) + "."


def figure_pca(runs: dict[str, AnisotropyRun], results: Writer) -> None:
    views = {name: r.view for name, r in runs.items()}
    fig = figure_kinds.plane_views(views, {n: r.positions for n, r in runs.items()}, "position in sentence", special={n: r.special for n, r in runs.items()})
    caption = "Token vectors of the last layer projected on their first two principal components, coloured by position in the sentence; special tokens marked."
    alt = "The last layer's token cloud and where the origin falls: " + "; ".join(
        f"for {name} the mean vector is {r.view.mean_vector_norm_ratio:.2f} of the average vector's length, and the two components shown explain "
        f"{100 * r.view.explained.sum():.1f}% of the variance"
        for name, r in runs.items()
    )
    results.figure(fig, "pca_last_layer", caption, alt=alt + ".")


def _anisotropy_by_layer(tables: dict[str, pd.DataFrame]):
    """One line per model: mean cosine by layer with its 95% interval; layer 0 is the embedding output."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    for (name, t), color in zip(tables.items(), COLORS):
        ax.plot(t["layer"], t["mean_cosine"], marker="o", color=color, label=name)
        ax.fill_between(t["layer"], t["ci95_low"], t["ci95_high"], color=color, alpha=0.2)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="layer (0 = embedding output)", ylabel="mean cosine similarity", ylim=(min(-0.05, ax.get_ylim()[0]), 1.0))
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    plotting.legend_above(fig, ax)
    return fig


ANISOTROPY = CHAPTER.table(
    "anisotropy_by_layer", "layer mean_cosine std_cosine ci95_low ci95_high n_pairs centered_mean_cosine excess_ci95_low excess_ci95_high"
)


@CHAPTER.rule
def anisotropic_in_every_layer(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = contextual(tables.read(model, claim.chapter, claim.table))
    units = [
        unit(
            f"layer {int(r.layer)}",
            inference.from_interval(
                r.mean_cosine - r.centered_mean_cosine, r.excess_ci95_low, r.excess_ci95_high, f"paired over {int(r.n_pairs):,} pairs", int(r.n_pairs), "pairs"
            ),
            claim.margin,
            of="layers",
        )
        for r in t.itertuples()
    ]
    control = f"centred baseline (same pairs): mean cosine {t['centered_mean_cosine'].min():+.3f} to {t['centered_mean_cosine'].max():+.3f}"
    return from_units(units, claim, control=control)
