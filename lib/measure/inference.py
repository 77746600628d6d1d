"""Effect sizes with their 95% intervals, for the designs the book's claims are tested in (paired items, replicates
over seeds or data sets, shares, two independent groups), and the decision of an interval against a margin.

Every function returns an `Estimate`, which carries the distribution its interval comes from (t with its degrees of
freedom, an exact binomial, a bootstrap over clusters, a normal approximation), so that its p-values come from that same distribution: a
p-value below 0.025 exactly when the 95% interval clears the bound. scipy does the distributions. An `exact` estimate
is a quantity measured on everything there is (a whole embedding matrix): its interval is the value itself, and it has
no p-value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from ..errors import require

LEVEL = 0.95
Z = float(stats.norm.ppf(0.5 + LEVEL / 2))


NORMAL, T, BINOMIAL, BOOTSTRAP, EXACT = "normal", "t", "binomial", "bootstrap", "exact"
DRAWS = 2000  # bootstrap resamples


def _atanh(r: float) -> float:
    return math.atanh(max(min(r, 1 - 1e-12), -1 + 1e-12))  # a correlation of ±1 stays finite


TRANSFORMS = {"log": (math.log, math.exp), "atanh": (_atanh, math.tanh)}  # scales on which an interval is symmetric


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float
    method: str
    exact: bool = False
    distribution: str = NORMAL  # NORMAL, T (with `df`), BINOMIAL (`k` of `n`, value = k / n × `scale`), BOOTSTRAP (`replicates` × `scale`) or EXACT
    df: float | None = None
    k: int | None = None
    n: int | None = None
    scale: float = 1.0
    transform: str | None = None  # "log", "atanh": the interval is symmetric on that scale
    replicates: tuple[float, ...] = ()  # the bootstrap distribution (BOOTSTRAP), in the estimate's units before `scale`
    size: int | None = None  # how many of the sampled unit the interval rests on (`of`): what more data would add to
    of: str = ""

    def text(self, digits: int = 2, unit: str = "", method: bool = True) -> str:
        """ "0.41 (95% interval 0.30 to 0.52; t over 6 layers)", or "0.41 (exact: whole matrix)"; without the method
        (said once for many estimates): "0.41 (0.30 to 0.52)"."""
        f = f"{{:.{digits}f}}"
        if self.exact:
            return f"{f.format(self.value)}{unit} ({self.method})"
        if not method:
            return f"{f.format(self.value)}{unit} ({f.format(self.low)} to {f.format(self.high)}{unit})"
        return f"{f.format(self.value)}{unit} (95% interval {f.format(self.low)} to {f.format(self.high)}{unit}; {self.method})"

    def scaled(self, factor: float, method: str | None = None) -> Estimate:
        """The same estimate in other units (e.g. a share as percentage points)."""
        require(self.transform is None, f"an estimate on a {self.transform} scale cannot be rescaled linearly")
        return replace(self, value=self.value * factor, low=self.low * factor, high=self.high * factor, method=method or self.method, scale=self.scale * factor)

    def p(self, bound: float, side: str) -> float | None:
        """One-sided p-value against "the effect is `bound`" in favour of `side` ("above": effect > bound), from the
        estimate's own distribution: an exact binomial test for a binomial share, t with the interval's degrees of
        freedom for a t-interval, the normal for a normal interval (on its symmetric scale). None if exact, and None for
        a sampled estimate whose interval has no width (identical seeds): it is no evidence either way (`unspread`)."""
        if self.exact:
            return None
        if self.distribution == BINOMIAL:
            return _binomial_p(self.k, self.n, bound / self.scale, side)
        if self.distribution == BOOTSTRAP:  # the share of resamples on the other side of the bound (+1: never 0)
            reps = np.asarray(self.replicates)
            against = reps <= bound / self.scale if side == "above" else reps >= bound / self.scale
            return float((1 + against.sum()) / (1 + len(reps)))
        forward = TRANSFORMS[self.transform][0] if self.transform else (lambda x: x)
        low, high = forward(self.low), forward(self.high)
        centre = (low + high) / 2
        quantile = float(stats.t.ppf(0.5 + LEVEL / 2, self.df)) if self.distribution == T else Z
        se = (high - low) / (2 * quantile)
        if se <= 0:  # no spread: the replicates did not vary, so they say nothing about the uncertainty
            return None
        distance = (centre - forward(bound)) if side == "above" else (forward(bound) - centre)
        return float(stats.t.sf(distance / se, self.df) if self.distribution == T else stats.norm.sf(distance / se))

    @property
    def unspread(self) -> bool:
        """A sampled estimate whose interval has no width: its replicates were identical (a seed that changes
        nothing), so it carries no uncertainty to decide with."""
        return not self.exact and self.distribution not in (BINOMIAL, BOOTSTRAP) and not self.high > self.low

    def p_floor(self) -> tuple[float, str]:
        """The smallest p-value this estimate's method supports, and the method in words: a normal or t tail is an
        approximation, trusted to 1e-10; a bootstrap cannot go below one in its resamples + 1; an exact binomial
        is computed in double precision (1e-15)."""
        if self.distribution == BOOTSTRAP:
            return 1 / (1 + len(self.replicates)), f"{len(self.replicates):,} bootstrap resamples"
        if self.distribution == BINOMIAL:
            return 1e-15, "exact binomial"
        return 1e-10, "t approximation" if self.distribution == T else "normal approximation"

    def back_transformed(self, transform: str, method: str) -> Estimate:
        """An estimate made on a transformed scale (e.g. the mean of log ratios) reported on the original one (the
        geometric mean ratio); its p-values are still computed on the transformed scale."""
        inverse = TRANSFORMS[transform][1]
        return replace(self, value=inverse(self.value), low=inverse(self.low), high=inverse(self.high), method=method, transform=transform)


def _binomial_p(k: int, n: int, share: float, side: str) -> float:
    """One-sided exact binomial p-value of k of n against the share `share`."""
    if share <= 0:
        return 0.0 if side == "above" and k > 0 else 1.0
    if share >= 1:
        return 0.0 if side == "below" and k < n else 1.0
    return float(stats.binomtest(int(k), int(n), share, alternative="greater" if side == "above" else "less").pvalue)


def exact(value: float, method: str) -> Estimate:
    """A quantity measured on everything there is: its interval is the value itself."""
    return Estimate(float(value), float(value), float(value), method, exact=True, distribution=EXACT)


def from_interval(value: float, low: float, high: float, method: str, size: int | None = None, of: str = "") -> Estimate:
    """An estimate whose interval a chapter computed (and wrote into its table, e.g. a bootstrap interval) over `size`
    of `of`; its p-values read it as a normal interval."""
    return Estimate(float(value), float(low), float(high), method, size=size, of=of)


def cluster_share(hits: Sequence[int], sizes: Sequence[int], of: str, seed: int = 0, draws: int = DRAWS) -> Estimate:
    """A share sum(hits) / sum(sizes) of items that come in clusters (the tokens of a sentence, a sentence's vectors in
    every layer): clusters resampled with replacement (`draws` times, seeded), percentile interval; its p-values are
    the share of resamples beyond the bound. Wider than a binomial over items wherever items of a cluster go together."""
    h, m = np.asarray(hits, dtype=float), np.asarray(sizes, dtype=float)
    require(len(h) == len(m) and len(h) >= 2 and m.sum() > 0, f"a cluster bootstrap needs at least two clusters with items, got {len(h)}")
    rng = np.random.default_rng(seed)
    reps = np.empty(draws)
    for start in range(0, draws, 200):  # 200 resamples at a time: bounded memory for 10,000s of clusters
        picked = rng.integers(0, len(h), size=(min(200, draws - start), len(h)))
        reps[start : start + len(picked)] = h[picked].sum(axis=1) / m[picked].sum(axis=1)
    low, high = np.quantile(reps, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    value = float(h.sum() / m.sum())
    method = f"bootstrap over {len(h):,} {of}"
    return Estimate(value, min(float(low), value), max(float(high), value), method, distribution=BOOTSTRAP, replicates=tuple(reps.tolist()), size=len(h), of=of)


def mean_t(values: Sequence[float], over: str) -> Estimate:
    """The mean of independent replicates (seeds, data sets) with its t-interval."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    require(len(x) >= 2, f"a t-interval over {over} needs at least two values, got {len(x)}")
    half = float(stats.t.ppf(0.5 + LEVEL / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return Estimate(
        float(x.mean()), float(x.mean()) - half, float(x.mean()) + half, f"t over {len(x)} {over}", distribution=T, df=len(x) - 1, size=len(x), of=over
    )


def welch(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int, over: str) -> Estimate:
    """mean_a − mean_b of two independent groups of replicates, with Welch's interval."""
    require(n_a >= 2 and n_b >= 2, f"a Welch interval needs at least two {over} per group, got {n_a} and {n_b}")
    va, vb = sd_a**2 / n_a, sd_b**2 / n_b
    diff, se = mean_a - mean_b, math.sqrt(va + vb)
    if se == 0:
        return Estimate(diff, diff, diff, f"Welch over {n_a} and {n_b} {over}: no spread, the {over} gave identical results", distribution=T, df=n_a + n_b - 2)
    df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, df) * se)
    return Estimate(diff, diff - half, diff + half, f"Welch over {n_a} and {n_b} {over}", distribution=T, df=df, size=min(n_a, n_b), of=f"{over} per group")


def mean_of(estimates: Sequence[Estimate], over: str) -> Estimate:
    """The mean of independent estimates (one Welch difference per task, say): its standard error from theirs (each
    read off its interval with its own quantile), t with Welch-Satterthwaite degrees of freedom (normal when every
    estimate is)."""
    require(len(estimates) > 0 and not any(e.exact or e.transform for e in estimates), "a mean of estimates needs sampled estimates on their own scale")
    ses = [(e.high - e.low) / (2 * (float(stats.t.ppf(0.5 + LEVEL / 2, e.df)) if e.distribution == T else Z)) for e in estimates]
    k, variance = len(estimates), sum(se**2 for se in ses)
    mean, se = sum(e.value for e in estimates) / k, math.sqrt(variance) / k
    spread = sum(s**4 / e.df for s, e in zip(ses, estimates) if e.distribution == T)
    method = f"mean over {k} {over}"
    if spread == 0:
        return Estimate(mean, mean - Z * se, mean + Z * se, method)
    df = variance**2 / spread
    half = float(stats.t.ppf(0.5 + LEVEL / 2, df)) * se
    return Estimate(mean, mean - half, mean + half, method, distribution=T, df=df)


def proportion(k: int, n: int, of: str) -> Estimate:
    """A share k/n with its exact (Clopper-Pearson) interval."""
    require(n > 0 and 0 <= k <= n, f"a proportion needs 0 <= k <= n and n > 0, got {k}/{n}")
    ci = stats.binomtest(int(k), int(n)).proportion_ci(LEVEL, method="exact")
    return Estimate(k / n, float(ci.low), float(ci.high), f"exact binomial over {n:,} {of}", distribution=BINOMIAL, k=int(k), n=int(n), size=int(n), of=of)


def paired_proportions(only_a: int, only_b: int, n: int, of: str) -> Estimate:
    """Accuracy of A minus accuracy of B on the same n items, from the discordant counts (A right and B wrong, and the
    reverse): the difference, with the paired interval of Agresti and Min (2005), a Wald interval after adding 0.5 to
    each cell of the 2 × 2 table, so that no discordant items out of few does not read as certainty."""
    require(n > 0 and only_a >= 0 and only_b >= 0 and only_a + only_b <= n, f"discordant counts {only_a}, {only_b} do not fit {n} items")
    a, b, m = only_a + 0.5, only_b + 0.5, n + 2
    centre, half = (a - b) / m, Z * math.sqrt(a + b - (a - b) ** 2 / m) / m
    return Estimate((only_a - only_b) / n, centre - half, centre + half, f"paired over {n:,} {of}, {only_a} vs {only_b} discordant", size=n, of=of)


def independent_proportions(p_a: float, n_a: int, p_b: float, n_b: int, of: str) -> Estimate:
    """p_a − p_b of two shares of separate items (conservative for shares of the same items): Wald interval."""
    diff = p_a - p_b
    half = Z * math.sqrt(p_a * (1 - p_a) / n_a + p_b * (1 - p_b) / n_b)
    return Estimate(diff, diff - half, diff + half, f"two shares of {n_a:,} and {n_b:,} {of}", size=min(n_a, n_b), of=of)


def spearman(x: Sequence[float], y: Sequence[float], of: str) -> Estimate:
    """Spearman's rank correlation with a Fisher-z interval (standard error 1.06 / sqrt(n − 3), Fieller et al. 1957)."""
    n = len(x)
    require(n >= 4, f"a rank correlation interval needs at least 4 {of}, got {n}")
    rho = float(stats.spearmanr(x, y).statistic)
    z, half = math.atanh(max(min(rho, 0.99), -0.99)), Z * 1.06 / math.sqrt(n - 3)  # |ρ| = 1 capped: the transform is infinite there
    low, high = math.tanh(z - half), math.tanh(z + half)
    return Estimate(rho, min(low, rho), max(high, rho), f"Spearman over {n} {of}, Fisher z", transform="atanh", size=n, of=of)


POWER = 0.8  # the chance of a decision that `sample_to_decide` plans for


def sample_to_decide(estimate: Estimate, margin: float, direction: str = "above", power: float = POWER) -> float | None:
    """About how many of the estimate's sampled unit (`size` of `of`) a 95% interval would need to clear `margin` with
    probability `power` if the effect were what was measured: size × ((z_0.975 + z_power) × se / distance)², the
    standard error read off the interval on its symmetric scale, the distance that to the margin ("within": to the
    nearer of ±margin). None for an exact estimate, one without a size, or one that sits on the margin."""
    if estimate.exact or not estimate.size:
        return None
    forward = TRANSFORMS[estimate.transform][0] if estimate.transform else (lambda v: v)
    if estimate.distribution == BOOTSTRAP:
        se = float(np.std(np.asarray(estimate.replicates) * estimate.scale, ddof=1))
    else:
        quantile = float(stats.t.ppf(0.5 + LEVEL / 2, estimate.df)) if estimate.distribution == T else Z
        se = (forward(estimate.high) - forward(estimate.low)) / (2 * quantile)
    if direction == "within":
        distance = abs(margin - abs(estimate.value))
    else:
        distance = abs(forward(estimate.value) - forward(margin))
    if se <= 0 or distance <= 0:
        return None
    n = estimate.size * ((Z + float(stats.norm.ppf(power))) * se / distance) ** 2
    if estimate.distribution != T:
        return n
    # a t-interval also narrows as its degrees of freedom grow (taken to grow with the sample): the smallest such n
    per_unit = estimate.df / estimate.size

    def enough(m: float) -> bool:
        df = max(per_unit * m, 1.0)
        return (float(stats.t.ppf(0.5 + LEVEL / 2, df)) + float(stats.t.ppf(power, df))) * se * math.sqrt(estimate.size / m) <= distance

    m = max(n, 2.0)
    while not enough(m) and m < 1e9:
        m *= 1.05
    return m


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (family-wise error), in the input order."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    scaled = np.minimum(1.0, np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p)))))
    out = np.empty_like(p)
    out[order] = scaled
    return out
