"""The variants the clipping chapters compare, fitted once per model, and the one loop that scores every variant in
every layer.

- raw: the vectors as the model gives them;
- clipped: the model's outlier set (`outlier_set`) zeroed, in every layer (Luo et al. 2021, §4.1), or with
  protocol "layer" each layer's own flagged dimensions (their Appendix D.1, for large models);
- clipped-random: as many randomly drawn dimensions zeroed as `clipped` zeroes, none of them ever flagged as an
  outlier (a control: what zeroing *any* k dimensions does);
- whitened: the thesis's whitening (Luo 2021, §3.2.3): each layer's mean and covariance of the *token* vectors of a
  training sample;
- whitened-sentences: whitening of mean-pooled *sentence* vectors of a training sample (Su et al. 2021), a labelled
  variant where a chapter scores sentence vectors.

Nothing is fitted on the texts being scored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import matplotlib
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ..core.sources import comma_list
from ..encode.collectors import LayerStats
from ..encode.features import TokenMoments
from ..errors import require
from ..measure import transforms
from ..measure.outliers import CLIP_PROTOCOLS
from . import plotting
from .outlier_set import OutlierSet
from .plotting import COLORS
from .wording import listed, signed

RAW, CLIPPED, CLIPPED_RANDOM, WHITENED, WHITENED_SENTENCES = "raw", "clipped", "clipped-random", "whitened", "whitened-sentences"
VARIANTS = {
    RAW: "the model's vectors",
    CLIPPED: "the model's outlier dimensions zeroed (Luo et al. 2021)",
    CLIPPED_RANDOM: "as many random non-outlier dimensions zeroed (a control)",
    WHITENED: "whitening fitted on the token vectors of a training sample (Luo 2021, thesis §3.2.3)",
    WHITENED_SENTENCES: "whitening fitted on the pooled sentence vectors of a training sample (Su et al. 2021)",
}
# what the clipping chapters (06-09) accept for their `clip` and `variants` parameters (their declarations)
ALLOWED = {"clip": ", ".join(CLIP_PROTOCOLS), "variants": "comma-separated, any of: " + ", ".join(VARIANTS)}


def clipping_note(sets: list[OutlierSet]) -> str:
    """The clipping set of each model, as chapters 06-09 say it before their results."""
    return "**Clipping sets** (chapter 02; the same in chapters 06-09):\n\n" + "\n".join(f"- {s.describe()}" for s in sets)


@dataclass
class Variants:
    """Per variant, one fitted transform per layer (index = layer, 0 = embedding output)."""

    transforms: dict[str, list]
    clip_protocol: str

    @property
    def n_layers(self) -> int:
        return len(next(iter(self.transforms.values())))

    def clipped_dims(self, layer: int, variant: str = CLIPPED) -> list[int]:
        """The dimensions a clipping variant zeroes in a layer (none for the other variants)."""
        return self.transforms[variant][layer].dims.tolist() if variant.startswith(CLIPPED) and variant in self.transforms else []

    def dropped_components(self, layer: int) -> int:
        return int(self.transforms[WHITENED][layer].dropped_) if WHITENED in self.transforms else 0

    def score(self, score: Callable[[Callable[[np.ndarray], np.ndarray], int, str], dict | list[dict]], desc: str | None = None) -> pd.DataFrame:
        """One row (or several) per variant and layer: {"variant", "layer", **score(transform, layer, variant)}, where transform
        maps that layer's vectors (n, width) to the variant's. The only loop over variants and layers in the book; with
        desc, a progress bar."""
        cells = [(variant, layer) for variant in self.transforms for layer in range(self.n_layers)]
        rows = []
        for variant, layer in tqdm(cells, desc=desc, unit="layer", disable=desc is None):
            out = score(self.transforms[variant][layer].transform, layer, variant)
            rows += [{"variant": variant, "layer": layer, **row} for row in (out if isinstance(out, list) else [out])]
        return pd.DataFrame(rows)


def requested(value: str) -> list[str]:
    """The variants asked for (comma-separated), each known; raw always included, first."""
    asked = comma_list(value)
    unknown = [v for v in asked if v not in VARIANTS]
    require(not unknown, f"unknown variants {unknown}; choose from {', '.join(VARIANTS)}")
    return [RAW] + [v for v in asked if v != RAW]


def fit(
    wanted: list[str],
    outlier_set: OutlierSet,
    protocol: str = "model",
    token_stats: LayerStats | TokenMoments | None = None,
    sentence_vectors: np.ndarray | None = None,
    seed: int = 0,
) -> Variants:
    """The wanted variants for one model: clipping from its outlier set, token whitening from the per-layer moments of
    a training sample's tokens (`LayerStats(covariance=True)`), sentence whitening from a training sample's pooled
    vectors (n, layers, width); the random control's dimensions from `seed`."""
    flags = outlier_set.flags(protocol)
    out: dict[str, list] = {}
    for variant in wanted:
        if variant == RAW:
            out[variant] = [transforms.Identity() for _ in flags]
        elif variant == CLIPPED:
            out[variant] = [transforms.Clip(np.flatnonzero(row), flags.shape[1]) for row in flags]
        elif variant == CLIPPED_RANDOM:
            out[variant] = [transforms.Clip(dims, flags.shape[1]) for dims in random_dims(flags, seed)]
        elif variant == WHITENED:
            require(token_stats is not None, "token whitening needs the token statistics of a training sample")
            out[variant] = transforms.whitening_from_moments(token_stats.mean, token_stats.covariance())
        elif variant == WHITENED_SENTENCES:
            require(sentence_vectors is not None, "sentence whitening needs the pooled vectors of a training sample")
            out[variant] = transforms.whitening_from_vectors(sentence_vectors)
        else:
            require(False, f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    require(len({len(v) for v in out.values()}) == 1, "the variants were fitted on different numbers of layers")
    return Variants(out, protocol)


def random_dims(flags: np.ndarray, seed: int) -> list[np.ndarray]:
    """Per layer, as many dimensions as that layer flags, drawn at random (seeded) from those never flagged in any
    layer; layers that flag equally many get the same draw, so a model-level set is matched by one random set."""
    pool = np.random.default_rng(seed).permutation(np.flatnonzero(~flags.any(axis=0)))
    counts = flags.sum(axis=1)
    require(counts.max(initial=0) <= len(pool), "too few never-flagged dimensions to draw a random control set from")
    return [np.sort(pool[:k]) for k in counts]


def variants_by_layer(tables: dict[str, pd.DataFrame], metrics: list[str], labels: list[str]):
    """One row per model, one panel per metric: the metric by layer for each variant (raw/clipped/whitened), one
    legend above the panels."""
    fig, axes = plotting.grid(len(tables) * len(metrics), columns=len(metrics), panel_height=3.2)
    for row, (name, t) in enumerate(tables.items()):
        for ax, metric, label in zip(axes[row * len(metrics) :], metrics, labels):
            for variant, part in t.groupby("variant", sort=False):
                style, color = VARIANT_STYLE.get(variant, ("-", None))
                raw = variant == RAW  # hollow, larger and on top: visible where a variant changes nothing
                ax.plot(
                    part["layer"], part[metric], style, color=color, ms=7 if raw else 4, mfc="none" if raw else color, zorder=3 if raw else 2, label=variant
                )
            ax.axhline(0, color="grey", lw=0.8)
            ax.set(xlabel="layer (0 = embedding output)", ylabel=label, title=name)
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    plotting.legend_above(fig, axes[0])
    return fig


def differences_by_layer(
    levels: dict[str, pd.DataFrame], differences: dict[str, pd.DataFrame], level_label: str, difference_label: str, reference: float, reference_label: str
):
    """One row per model: a narrow panel with the raw vectors' level by layer (`levels`: columns layer, value) and a
    dashed line at `reference` (chance, or a baseline), and a wide panel with each other variant's difference from raw
    by layer with its 95% interval and a zero line (`differences`: columns variant, layer, difference, low, high;
    `plotting.differences`); one legend above the panels."""
    fig, axes = plotting.grid(2 * len(levels), columns=2, panel_height=3.0, gridspec_kw={"width_ratios": [1, 2.2]})
    for (name, level), left, right in zip(levels.items(), axes[::2], axes[1::2]):
        left.plot(level["layer"], level["value"], "-o", color=VARIANT_STYLE[RAW][1], ms=4, label="raw (left panels)")
        left.axhline(reference, color="grey", ls="--", lw=1.2, label=f"{reference_label} (left panels)")
        left.set(xlabel="layer", ylabel=level_label, title="raw vectors")
        d = differences[name]
        shown = list(dict.fromkeys(d["variant"]))
        for i, variant in enumerate(shown):
            part, (style, color) = d[d["variant"] == variant], VARIANT_STYLE[variant]
            shift = (i - (len(shown) - 1) / 2) * 0.15  # side by side, so that intervals at one layer do not hide each other
            plotting.differences(right, part["layer"] + shift, part["difference"], part["low"], part["high"], f"{variant} − raw", color, style[-1])
        right.set(xlabel="layer (0 = embedding output)", ylabel=difference_label, title=f"{name}: difference from raw")
        for ax in (left, right):
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    for proxy in axes[0].get_lines():  # the left panels' lines, named in the one legend with the differences
        axes[1].plot([], [], color=proxy.get_color(), ls=proxy.get_linestyle(), marker=proxy.get_marker(), ms=4, label=proxy.get_label())
    plotting.legend_above(fig, axes[1])
    return fig


def differences_text(differences: dict[str, pd.DataFrame], unit: str, digits: int = 1) -> str:
    """The differences from raw in words, per model and variant: their range over the layers and in how many layers
    the 95% interval excludes zero (a figure's alt text)."""
    parts = []
    for name, d in differences.items():
        said = []
        for variant, part in d.groupby("variant", sort=False):
            clear = int(((part["low"] > 0) | (part["high"] < 0)).sum())
            span = f"{signed(part['difference'].min(), digits)} to {signed(part['difference'].max(), digits)}{unit}"
            said.append(f"{variant} − raw {span} (interval clear of zero in {clear or 'none'} of {len(part)} layers)")
        parts.append(f"{name}: " + ", ".join(said))
    return "Differences from the raw vectors by layer: " + "; ".join(parts) + "."


def for_models(said: list[tuple[str, str]]) -> str:
    """Per-model phrases joined into one: "+1.2 for A and -0.3 for B" from [(A, "+1.2"), (B, "-0.3")]."""
    return listed([f"{text} for {name}" for name, text in said])


def changes_text(changes: list[tuple[float, float, float]], unit: str = "") -> str:
    """Changes with their 95% intervals, (change, low, high) for each model in the order the sentence names the models:
    "+1.2 and -0.3 points (95% intervals +0.3 to +2.1 and -1.0 to +0.4)"."""
    intervals = listed([f"{signed(low)} to {signed(high)}" for _, low, high in changes])
    return f"{listed([signed(v) for v, _, _ in changes])}{unit} (95% interval{'s' * (len(changes) > 1)} {intervals})"


VARIANT_STYLE = {
    RAW: ("-o", COLORS[0]),
    CLIPPED: ("--s", COLORS[1]),
    CLIPPED_RANDOM: ("-.x", COLORS[3]),
    WHITENED: (":^", COLORS[2]),
    WHITENED_SENTENCES: ("-.v", COLORS[7]),  # not the orange, which is too light on white (about 2:1)
}
