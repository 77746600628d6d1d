"""The claims scorecard: every claim of the papers in `claims.yaml`, tested on the result tables one profile's chapters
wrote, model by model.

Every rule measures the effect the claim is about, with its uncertainty from the data (an `inference.Estimate`: a paired
test, an exact binomial interval, a t-interval over seeds or data sets), and compares it with a stated margin (the
registry gives the margin and why it matters):

- `holds`: the interval clears the margin in the claimed direction;
- `does not hold`: the interval lies on the other side of the margin (or shows the opposite);
- `inconclusive`: the interval contains the margin: the data cannot tell;
- `mixed`: the claim holds in some units (layers, data sets, tasks) and does not hold in others;
- `not testable` (the claim is outside what the book can run offline, or the model lacks what it is about) and
  `not run` (the chapter has not written the table for this profile).

A quantity measured on everything there is (a whole embedding matrix) has no interval; it is compared with the margin
as it is. Verdicts that rest on a p-value are corrected together for multiple testing (Holm): a verdict whose adjusted
p-value is not below 0.05 becomes `inconclusive`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ..build.sources import chapters
from ..errors import require
from ..experiments.schemas import schema
from ..measure import inference
from ..measure.inference import Estimate
from ..provenance import record
from ..settings import results_dir

HOLDS, MIXED, FAILS, INCONCLUSIVE, UNTESTABLE, NOT_RUN = "holds", "mixed", "does not hold", "inconclusive", "not testable", "not run"
VERDICTS = (HOLDS, MIXED, FAILS, INCONCLUSIVE, UNTESTABLE, NOT_RUN)
ALPHA = 0.05  # family-wise error rate of the scorecard's p-value verdicts (Holm)
REGISTRY = Path(__file__).with_name("claims.yaml")


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    section: str
    claim: str
    paper_value: str
    chapter: str | None = None
    table: str | None = None
    rule: str | None = None
    effect: str | None = None  # what the rule measures
    margin: float | None = None  # the size of effect that matters
    reason: str | None = None  # why that margin
    control: str | None = None  # the control the verdict uses, if any
    untestable: str | None = None


@dataclass(frozen=True)
class Outcome:
    verdict: str
    ours: str  # the number(s) behind the verdict, in words
    estimate: Estimate | None = None  # the effect the verdict rests on (the weakest unit where there are several)
    p: float | None = None  # two-sided p-value of the verdict reached (None: exact or inconclusive), before Holm
    control: str = ""  # what the control showed


def claims(path: Path = REGISTRY) -> list[Claim]:
    """The registry, each entry checked: a testable claim names a chapter, table, known rule, threshold and reason. Read
    inside a book build, it is recorded as the chapter's input: an edited registry executes the chapter again."""
    record("data", path, f"claims registry {path.name}")
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    known = {f.name for f in fields(Claim)}
    out = []
    for entry in entries:
        require(set(entry) <= known, f"{path.name}: {entry.get('id')}: unknown fields {sorted(set(entry) - known)}")
        claim = Claim(**entry)
        if claim.untestable is None:
            missing = [f for f in ("chapter", "table", "rule", "effect", "margin", "reason") if getattr(claim, f) is None]
            require(not missing, f"{path.name}: {claim.id} needs {', '.join(missing)} (or `untestable` with a reason)")
            require(claim.rule in RULES, f"{path.name}: {claim.id}: unknown rule {claim.rule!r}; rules are {', '.join(sorted(RULES))}")
            require(claim.chapter in chapters(), f"{path.name}: {claim.id}: no chapter {claim.chapter!r}")
            schema(claim.chapter, claim.table)  # every scored table has declared columns
        out.append(claim)
    ids = [c.id for c in out]
    require(len(ids) == len(set(ids)), f"{path.name}: claim ids repeat")
    return out


class Tables:
    """One profile's result tables (`results/<profile>/<model>/<chapter>/<table>.csv`). The profile's results folder is
    recorded as an input of the running chapter, so the scorecard is executed again when any result changes."""

    def __init__(self, profile: str, root: Path | None = None):
        self.root = (root or results_dir()) / profile
        record("data", self.root, f"results of the {profile} edition")

    def path(self, model: str, chapter: str, table: str) -> Path:
        return self.root / model / chapter / f"{table}.csv"

    def read(self, model: str, chapter: str, table: str) -> pd.DataFrame | None:
        """The table, checked against its declared schema (`lib.experiments.schemas`), or None when it was not written."""
        path = self.path(model, chapter, table)
        return schema(chapter, table).check(pd.read_csv(path)) if path.is_file() else None

    def models(self, chapter: str, table: str) -> list[str]:
        """Model folders that hold the table, sorted."""
        return sorted(p.parent.parent.name for p in self.root.glob(f"*/{chapter}/{table}.csv"))

    def name(self, model: str, chapter: str) -> str:
        """The model's name as a chapter recorded it (meta.json: this chapter's first, then any other's), else its folder."""
        folder = self.root / model
        for meta in [folder / chapter / "meta.json", *sorted(folder.glob("*/meta.json"))]:
            try:
                name = json.loads(meta.read_text(encoding="utf-8"))["model_info"].get("name")
            except (OSError, ValueError, KeyError, AttributeError):
                continue
            if name:
                return name
        return model


Rule = Callable[[Tables, str, Claim], Outcome]


@dataclass(frozen=True)
class Decision:
    verdict: str
    p: float | None  # two-sided p-value of the verdict reached (None: exact, or inconclusive)


def decide(estimate: Estimate, margin: float, direction: str = "above") -> Decision:
    """An estimate against a margin. "above": the claim is effect > margin; "below": effect < margin; "within": |effect|
    < margin (an equivalence claim). Holds when the 95% interval clears the margin on the claimed side, does not hold
    when it clears it on the other side, inconclusive otherwise; an exact estimate is compared as it is."""
    v, lo, hi = estimate.value, estimate.low, estimate.high
    if direction == "within":
        if estimate.exact:
            return Decision(HOLDS if abs(v) <= margin else FAILS, None)
        if -margin < lo and hi < margin:
            return Decision(HOLDS, 2 * max(estimate.p(-margin, "above"), estimate.p(margin, "below")))
        if lo > margin or hi < -margin:
            return Decision(FAILS, 2 * (estimate.p(margin, "above") if lo > margin else estimate.p(-margin, "below")))
        return Decision(INCONCLUSIVE, None)
    require(direction in ("above", "below"), f"unknown direction {direction!r}")
    sign = 1 if direction == "above" else -1
    if estimate.exact:
        return Decision(HOLDS if sign * (v - margin) >= 0 else FAILS, None)
    if (lo > margin) if sign > 0 else (hi < margin):
        return Decision(HOLDS, 2 * estimate.p(margin, direction))
    if (hi < margin) if sign > 0 else (lo > margin):
        return Decision(FAILS, 2 * estimate.p(margin, "below" if sign > 0 else "above"))
    return Decision(INCONCLUSIVE, None)


@dataclass(frozen=True)
class Unit:
    """One layer, data set, task or dimension a claim is tested in, and its decision."""

    name: str
    estimate: Estimate
    decision: Decision


def unit(name: str, estimate: Estimate, margin: float, direction: str = "above") -> Unit:
    return Unit(name, estimate, decide(estimate, margin, direction))


def _max_p(units: list[Unit]) -> float | None:
    ps = [u.decision.p for u in units]
    return None if all(p is None for p in ps) else max(p or 0.0 for p in ps)


def combine(units: list[Unit], any_failure_refutes: bool = False) -> Decision:
    """A claim tested in several units: holds (does not hold) when it holds (does not hold) in every unit; mixed when it
    holds in some and does not in others (or, for a claim that any failing unit refutes, does not hold); else
    inconclusive. The p-value is that of the weakest unit the verdict needs."""
    by = {v: [u for u in units if u.decision.verdict == v] for v in (HOLDS, FAILS)}
    if by[HOLDS] and len(by[HOLDS]) == len(units):
        return Decision(HOLDS, _max_p(by[HOLDS]))
    if by[FAILS] and (len(by[FAILS]) == len(units) or any_failure_refutes):
        return Decision(FAILS, _max_p(by[FAILS]) if len(by[FAILS]) == len(units) else min((u.decision.p or 0.0) for u in by[FAILS]))
    if by[HOLDS] and by[FAILS]:
        strongest = [min((u.decision.p or 0.0) for u in by[v]) for v in (HOLDS, FAILS)]
        return Decision(MIXED, max(strongest))
    return Decision(INCONCLUSIVE, None)


def _outcome(decision: Decision, ours: str, estimate: Estimate | None = None, control: str = "") -> Outcome:
    return Outcome(decision.verdict, ours, estimate, decision.p, control)


def _units_text(units: list[Unit], digits: int = 3, unit_label: str = "") -> str:
    """Every unit's estimate, interval and verdict; where the units share one interval method, it is said once:
    "95% intervals paired over 1,000 pairs: layer 1: 0.046 (0.044 to 0.047) → does not hold; layer 2: …"."""
    methods = {u.estimate.method for u in units}
    if len(units) == 1 or len(methods) > 1 or any(u.estimate.exact for u in units):
        return "; ".join(f"{u.name}: {u.estimate.text(digits, unit_label)} → {u.decision.verdict}" for u in units)
    each = (f"{u.name}: {u.estimate.text(digits, unit_label, method=False)} → {u.decision.verdict}" for u in units)
    return f"95% intervals {methods.pop()}: " + "; ".join(each)


def _from_units(units: list[Unit], digits: int = 3, unit_label: str = "", control: str = "", refute: bool = False) -> Outcome:
    decision = combine(units, refute)
    weakest = min(units, key=lambda u: abs(u.estimate.value))
    return _outcome(decision, _units_text(units, digits, unit_label), weakest.estimate, control)


def _contextual(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["layer"] >= 1]


# --- Luo et al. (2021) and Luo's thesis -------------------------------------------------------------------------------


def anisotropic_in_every_layer(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = _contextual(tables.read(model, claim.chapter, claim.table))
    units = [
        unit(
            f"layer {int(r.layer)}",
            inference.from_interval(r.mean_cosine - r.centered_mean_cosine, r.excess_ci95_low, r.excess_ci95_high, f"paired over {int(r.n_pairs):,} pairs"),
            claim.margin,
        )
        for r in t.itertuples()
    ]
    control = f"centred baseline (same pairs): mean cosine {t['centered_mean_cosine'].min():+.3f} to {t['centered_mean_cosine'].max():+.3f}"
    return _from_units(units, control=control)


def top_extreme_share(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    best = t.loc[t["percent"].idxmax()]
    n = int(best["n_vectors"])
    estimate = inference.proportion(round(float(best["percent"]) / 100 * n), n, "vectors (tokens of a sentence are not independent: too narrow)")
    decision = decide(estimate, claim.margin / 100)
    kind = "minimum" if best["kind"] == "argmin" else "maximum"
    return _outcome(decision, f"dim {int(best['dim'])} is the {kind} of {estimate.scaled(100).text(1, '%')}", estimate.scaled(100))


def model_outliers_exist(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    level = t[t["model_outlier"].astype(bool)]
    estimate = inference.exact(len(level), "chapter 02's criterion on its whole sample")
    found = ", ".join(f"{int(r.dim)} (|z| {r.max_abs_z:.0f}, {r.n_layers} layers)" for r in level.itertuples())
    largest = f"largest |z| of a flagged dim {t['max_abs_z'].max():.1f}" if len(t) else "no dim flagged in any layer"
    return _outcome(decide(estimate, claim.margin), f"{len(level)} model-level outlier dims" + (f": {found}" if found else f"; {largest}"), estimate)


def position_argmax_share(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    row = t[t["table"] == "position after the first"]
    if row.empty:
        return Outcome(UNTESTABLE, "the model has no position-embedding table")
    estimate = inference.exact(float(row["argmax_percent"].iloc[0]), f"every one of {int(row['n_rows'].iloc[0])} rows")
    return _outcome(decide(estimate, claim.margin), f"dim {int(row['argmax_dim'].iloc[0])} is the maximum of {estimate.value:.1f}% of positions", estimate)


def propagates_after_first_layernorm(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    if t.empty:
        return Outcome(UNTESTABLE, "no model-level outlier dimension to follow")
    stage = t.pivot(index="dim", columns="stage", values="positions_flagged_percent")
    units = [
        unit(f"dim {dim}", inference.exact(stage.loc[dim, "layer 0"], f"all {int(t['positions'].iloc[0])} positions"), claim.margin) for dim in stage.index
    ]
    control = "; ".join(f"dim {dim}: flagged at {stage.loc[dim, 'input']:.0f}% of positions before the LayerNorm" for dim in stage.index)
    best = max(units, key=lambda u: u.estimate.value)
    return _outcome(best.decision, f"after the first LayerNorm: {_units_text(units, 0, '%')}", best.estimate, control)


def layernorm_top_rank(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    first = t[t["layernorm"] == "embedding"]
    if first.empty:
        return Outcome(UNTESTABLE, "no model-level outlier dimension to rank, or no embedding LayerNorm")
    units = []
    for dim, part in first.groupby("dim"):
        best = part.loc[part["rank"].idxmin()]
        units.append(
            unit(
                f"dim {dim} ({'γ' if best['param'] == 'gamma' else 'β'})", inference.exact(best["rank"], f"rank of {int(best['width'])}"), claim.margin, "below"
            )
        )
    width = int(first["width"].iloc[0])
    control = f"a random dimension ranks in the top {claim.margin:g} of γ or β with probability {2 * claim.margin / width:.1%}"
    return _from_units(units, 0, control=control)


def probe_low_layers(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    low = t[t["layer"].between(1, 3)]
    if (low["shuffled_test_accuracy"] >= claim.margin).any():
        return Outcome(UNTESTABLE, "the shuffled-position control reaches the margin: the probe would score without position information")
    units = [
        unit(f"layer {int(r.layer)}", inference.proportion(round(r.test_accuracy * r.test_tokens), int(r.test_tokens), "test tokens"), claim.margin)
        for r in low.itertuples()
    ]
    control = "shuffled-position probe: " + ", ".join(f"{a:.1%}" for a in low["shuffled_test_accuracy"])
    return _from_units(units, control=control)


def probe_falls_with_depth(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = _contextual(tables.read(model, claim.chapter, claim.table)).sort_values("layer")
    first, last = t.iloc[0], t.iloc[-1]
    n = int(first["test_tokens"])
    estimate = inference.independent_proportions(first["test_accuracy"], n, last["test_accuracy"], n, "test tokens (the same tokens: conservative)")
    estimate = estimate.scaled(100)
    text = f"test accuracy layer {int(first['layer'])} minus layer {int(last['layer'])}: {estimate.text(1, ' points')}"
    return _outcome(decide(estimate, claim.margin), text, estimate)


def outlier_top_contributor(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = _contextual(tables.read(model, claim.chapter, claim.table))
    ranks = [c for c in t.columns if c.startswith("dim ") and c.endswith(" rank")]
    if not ranks:
        return Outcome(UNTESTABLE, "no model-level outlier dimension in this model")
    first = {probe: int((part[ranks].min(axis=1) == 1).sum()) for probe, part in t.groupby("probe")}
    layers = int(t["layer"].nunique())
    estimate = inference.proportion(first["centred"], layers, "layers")
    text = f"an outlier dim ranks first in {first['centred']} of {layers} layers with the centred probe ({estimate.text(2)})"
    control = f"paper's bias-free probe: first in {first['paper']} layers; trained on shuffled positions: first in {first['shuffled']}"
    return _outcome(decide(estimate, claim.margin), text, estimate, control)


def pe_lowers_perplexity(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    if len(t) < 2:
        return Outcome(UNTESTABLE, f"{len(t)} seed: a verdict over seeds needs at least two")
    log_ratio = inference.mean_t(np.log(t["ratio_without_over_with"]), "seeds")
    estimate = Estimate(*(math.exp(x) for x in (log_ratio.value, log_ratio.low, log_ratio.high)), method=log_ratio.method + " (log ratio)")
    per_seed = ", ".join(f"{r:.2f}×" for r in t["ratio_without_over_with"])
    return _outcome(
        decide(estimate, claim.margin), f"perplexity without / with position embeddings per seed {per_seed}; geometric mean {estimate.text(2, '×')}", estimate
    )


def outliers_only_with_pe(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    pe, nope = (t[t["position_embeddings"].astype(bool) == flag].set_index("seed") for flag in (True, False))
    seeds = pe.index.intersection(nope.index)
    if len(seeds) < 2:
        return Outcome(UNTESTABLE, f"{len(seeds)} seed: a verdict over seeds needs at least two")
    gap = pe.loc[seeds, "top_extreme_percent"] - nope.loc[seeds, "top_extreme_percent"]
    estimate = inference.mean_t(gap, "seeds")
    shares = "; ".join(
        f"seed {s}: dim {pe.loc[s, 'top_extreme_dim']} {pe.loc[s, 'top_extreme_percent']:.0f}% with PE, dim {nope.loc[s, 'top_extreme_dim']} "
        f"{nope.loc[s, 'top_extreme_percent']:.0f}% without"
        for s in seeds
    )
    control = "model-level outliers (robust z), with / without PE per seed: " + ", ".join(
        f"{pe.loc[s, 'model_outliers']}/{nope.loc[s, 'model_outliers']}" for s in seeds
    )
    return _outcome(
        decide(estimate, claim.margin),
        f"most frequent extreme dimension's share of vectors, with minus without PE: {estimate.text(1, ' points')} ({shares})",
        estimate,
        control,
    )


def _changes(t: pd.DataFrame, variant: str) -> pd.DataFrame:
    return _contextual(t[t["variant"] == variant]).set_index("layer")


def _clips(frame: pd.DataFrame) -> pd.Series:
    """Whether each row's variant zeroes any dimension (an empty `clipped_dims` is read back from CSV as NaN)."""
    return frame["clipped_dims"].notna() & (frame["clipped_dims"].astype(str).str.strip() != "")


def clipping_lowers_cosine(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    clipped, control = _changes(t, "clipped"), _changes(t, "clipped-random")
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
    return _from_units(units, control=control_text)


def clipping_raises_self_similarity(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    raw, clipped, control = (_changes(t, v)["self_similarity_minus_anisotropy"] for v in ("raw", "clipped", "clipped-random"))
    if not _clips(_changes(t, "clipped")).any():
        return Outcome(UNTESTABLE, "nothing is clipped in this model (no model-level outlier dimension)")
    estimate = inference.mean_t(clipped - raw, "layers (adjacent layers are not independent: too narrow)")
    control_text = f"random control: {(control - raw).mean():+.3f} on average"
    return _outcome(decide(estimate, claim.margin), f"self-similarity − anisotropy, clipped minus raw: {estimate.text(3)}", estimate, control_text)


def _wic(tables: Tables, model: str, claim: Claim) -> pd.DataFrame:
    return tables.read(model, claim.chapter, claim.table).set_index("variant")


def wic_clipping_gain(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = _wic(tables, model, claim)
    c = t.loc["clipped"]
    estimate = inference.paired_proportions(int(c["dev_right_only_here"]), int(c["dev_right_only_raw"]), int(c["dev_pairs"]), "development pairs").scaled(100)
    raw_acc, clip_acc = t.loc["raw", "dev_accuracy_of_that_choice"], c["dev_accuracy_of_that_choice"]
    control = (
        f"as many random dims zeroed: {t.loc['clipped-random', 'dev_accuracy_of_that_choice'] - raw_acc:+.1f} points" if "clipped-random" in t.index else ""
    )
    text = f"development accuracy {raw_acc:.1f} raw, {clip_acc:.1f} clipped: {estimate.text(1, ' points')}"
    return _outcome(decide(estimate, claim.margin), text, estimate, control)


def wic_whitening_beats_clipping(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = _wic(tables, model, claim)
    w = t.loc["whitened"]
    estimate = inference.paired_proportions(
        int(w["dev_right_only_here_vs_clipped"]), int(w["dev_right_only_clipped"]), int(w["dev_pairs"]), "development pairs"
    )
    estimate = estimate.scaled(100)
    accuracy = t["dev_accuracy_of_that_choice"]
    text = f"development accuracy {accuracy['clipped']:.1f} clipped, {accuracy['whitened']:.1f} whitened: {estimate.text(1, ' points')}"
    return _outcome(decide(estimate, claim.margin), text, estimate)


def _best_by_set(t: pd.DataFrame) -> pd.DataFrame:
    """Best Spearman per data set and variant, over the contextual layers (as the paper searches); the all-pairs SICK row
    (a second view of SICK) left out."""
    t = t[~t["dataset"].str.contains("all pairs") & (t["layer"] >= 1)]
    return t.groupby(["dataset", "variant"])["spearman_x100"].max().unstack("variant")


def sts_transform_gain(tables: Tables, model: str, claim: Claim) -> Outcome:
    best = _best_by_set(tables.read(model, claim.chapter, claim.table))
    units = [unit(v, inference.mean_t(best[v] - best["raw"], "data sets"), claim.margin) for v in ("clipped", "whitened")]
    return _from_units(units, 2, " points")  # clipping a model's last layer can move Spearman by hundredths only


def sts_whitening_beats_clipping(tables: Tables, model: str, claim: Claim) -> Outcome:
    best = _best_by_set(tables.read(model, claim.chapter, claim.table))
    estimate = inference.mean_t(best["whitened"] - best["clipped"], "data sets")
    return _outcome(decide(estimate, claim.margin), f"best Spearman × 100, whitened minus clipped: {estimate.text(1, ' points')}", estimate)


def glove_beats_model(tables: Tables, model: str, claim: Claim) -> Outcome:
    glove = tables.read("glove-6b-50d", claim.chapter, "glove_baseline")
    if glove is None:
        return Outcome(NOT_RUN, "no GloVe baseline table")
    best = _best_by_set(tables.read(model, claim.chapter, claim.table))["raw"]
    glove = glove.set_index("dataset")["spearman_x100"]
    years = [d for d in ("STS-12", "STS-13", "STS-14", "STS-15") if d in best.index and d in glove.index]
    if len(years) < 2:
        return Outcome(NOT_RUN, f"STS 2012-2015 scored on {len(years)} sets")
    estimate = inference.mean_t([glove[d] - best[d] for d in years], "data sets")
    wins = [d for d in years if glove[d] > best[d]]
    return _outcome(
        decide(estimate, claim.margin),
        f"GloVe minus the model's best layer: {estimate.text(1, ' points')}; GloVe higher on {len(wins)} of {len(years)}",
        estimate,
    )


def supervised_clipping_small(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table).set_index(["task", "variant"])
    tasks = list(dict.fromkeys(t.index.get_level_values("task")))
    if "clipped" not in t.index.get_level_values("variant"):
        return Outcome(NOT_RUN, "no clipped classifiers")
    accuracy = tables.read(model, claim.chapter, "accuracy_by_layer")
    if accuracy is not None and (accuracy.loc[accuracy["variant"] == "clipped", "clipped_dims"] == 0).all():
        return Outcome(UNTESTABLE, "nothing is clipped in this model (no model-level outlier dimension): the two classifiers are the same")
    units = []
    for task in tasks:
        r = t.loc[(task, "clipped")]
        estimate = inference.paired_proportions(int(r["test_right_only_here"]), int(r["test_right_only_raw"]), int(r["test_examples"]), "test examples")
        units.append(unit(task, estimate.scaled(100), claim.margin, "within"))
    return _from_units(units, 1, " points")


# --- Biš et al. (2021) --------------------------------------------------------------------------------------------------


def rare_tokens_closer(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    full = t[t["n_tokens"] == t["n_tokens"].max()]
    if len(full) < 2:
        return Outcome(UNTESTABLE, "fewer than two full frequency bins")
    first, last = full.iloc[0], full.iloc[-1]
    n = int(first["n_tokens"])
    estimate = inference.welch(last["mean_cosine"], last["std_cosine"], n, first["mean_cosine"], first["std_cosine"], n, "tokens")
    text = f"mean cosine {first['mean_cosine']:.2f} with the most frequent bin, {last['mean_cosine']:.2f} with the rarest full bin: {estimate.text(3)}"
    return _outcome(decide(estimate, claim.margin), text, estimate)


def few_tokens_cover(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    tokens = t[t["unit"].str.endswith(" tokens")]
    units = [
        unit(u.removesuffix(" tokens"), inference.exact(n, "counted on the whole corpus"), claim.margin, "below")
        for u, n in zip(tokens["unit"], tokens["items_for_30%"])
    ]
    return _from_units(units, 0)


def _isotropy(tables: Tables, model: str, claim: Claim) -> pd.Series:
    return tables.read(model, claim.chapter, claim.table).set_index("variant")["I1"]


def centering_raises_isotropy(tables: Tables, model: str, claim: Claim) -> Outcome:
    i1 = _isotropy(tables, model, claim)
    estimate = inference.exact(i1["centered"] - i1["raw"], "the whole matrix")
    return _outcome(decide(estimate, claim.margin), f"I(W) {i1['raw']:.3f} raw, {i1['centered']:.3f} centred: {estimate.text(3)}", estimate)


def _word_gain(tables: Tables, model: str, claim: Claim, variant: str, baseline: str, column: str = "pearson_cosine") -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    variants = [v for v in t["variant"].unique() if v.startswith(variant)]
    wide = t.pivot(index="benchmark", columns="variant", values=column).dropna()
    if not variants or len(wide) < 2:
        return Outcome(UNTESTABLE, "too few word-similarity benchmarks with pairs in the vocabulary")
    estimate = inference.mean_t(wide[variants[0]] - wide[baseline], "benchmarks")
    return _outcome(decide(estimate, claim.margin), f"{variants[0]} minus {baseline}, Pearson × 100: {estimate.text(2, ' points')}", estimate)


def postprocessing_helps(tables: Tables, model: str, claim: Claim) -> Outcome:
    return _word_gain(tables, model, claim, "post-processed", "raw")


def centering_helps_words(tables: Tables, model: str, claim: Claim) -> Outcome:
    return _word_gain(tables, model, claim, "centered", "raw")


def scaled_beats_centering(tables: Tables, model: str, claim: Claim) -> Outcome:
    return _word_gain(tables, model, claim, "centered-scaled", "centered")


def inner_product_gains_more(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    post = next((v for v in t["variant"].unique() if v.startswith("post-processed")), None)
    gains = {c: t.pivot(index="benchmark", columns="variant", values=c).dropna() for c in ("pearson_inner_product", "pearson_cosine")}
    if post is None or len(gains["pearson_cosine"]) < 2:
        return Outcome(UNTESTABLE, "too few word-similarity benchmarks with pairs in the vocabulary")
    delta = {c: g[post] - g["raw"] for c, g in gains.items()}
    estimate = inference.mean_t(delta["pearson_inner_product"] - delta["pearson_cosine"], "benchmarks")
    return _outcome(decide(estimate, claim.margin), f"gain from {post} with inner product minus gain with cosine: {estimate.text(2, ' points')}", estimate)


def spectrum_ratio_collapses(tables: Tables, model: str, claim: Claim) -> Outcome:
    r = tables.read(model, claim.chapter, claim.table).iloc[0]
    estimate = inference.exact(r["sigma1_over_sigma2_raw"] / r["sigma1_over_sigma2_centered"], "the whole matrix")
    text = f"σ1/σ2 {r['sigma1_over_sigma2_raw']:.2f} raw, {r['sigma1_over_sigma2_centered']:.2f} centred: falls {estimate.text(2, '×')}"
    return _outcome(decide(estimate, claim.margin), text, estimate)


def top_direction_is_mean(tables: Tables, model: str, claim: Claim) -> Outcome:
    r = tables.read(model, claim.chapter, claim.table).iloc[0]
    estimate = inference.exact(r["top_direction_mean_cosine"], "the whole matrix")
    control = f"a random direction in {int(r['width'])} dimensions: |cosine| about {math.sqrt(2 / (math.pi * r['width'])):.3f}"
    return _outcome(decide(estimate, claim.margin), f"|cosine| of WᵀW's top eigenvector with the mean row: {estimate.text(3)}", estimate, control)


# --- Ding et al. (2022) -------------------------------------------------------------------------------------------------


def _calibration_cells(tables: Tables, model: str, claim: Claim, value: str, spread: str) -> dict[tuple[str, str], Estimate]:
    """Per (task, method) the Welch difference method − uncalibrated of one measured column over seeds."""
    t = tables.read(model, claim.chapter, claim.table)
    base = t[t["method"] == "none"].set_index("task")
    cells = {}
    for r in t[t["method"] != "none"].itertuples():
        b = base.loc[r.task]
        if int(r.runs) >= 2 and int(b["runs"]) >= 2:
            cells[(r.task, r.method)] = inference.welch(getattr(r, value), getattr(r, spread), int(r.runs), b[value], b[spread], int(b["runs"]), "seeds")
    return cells


def no_consistent_gain(tables: Tables, model: str, claim: Claim) -> Outcome:
    cells = _calibration_cells(tables, model, claim, "score_mean", "score_std")
    if not cells:
        return Outcome(UNTESTABLE, "fewer than two seeds per method: no spread to test against")
    units = []
    for method in dict.fromkeys(m for _, m in cells):
        diffs = [e for (_, m), e in cells.items() if m == method]
        mean = float(np.mean([e.value for e in diffs]))
        half = math.sqrt(sum(((e.high - e.low) / 2) ** 2 for e in diffs)) / len(diffs)  # the tasks' intervals, averaged
        units.append(unit(method, Estimate(mean, mean - half, mean + half, f"mean over {len(diffs)} tasks of Welch differences"), claim.margin, "below"))
    detectable = max((u.estimate.high - u.estimate.low) / 2 for u in units)
    return _from_units(units, 2, " points", f"smallest average gain these seeds could detect: about {detectable:.1f} points", refute=True)


def spectrum_isotropic(tables: Tables, model: str, claim: Claim) -> Outcome:
    cells = {k: e for k, e in _calibration_cells(tables, model, claim, "I1_mean", "I1_std").items() if k[1].startswith("spectrum")}
    if not cells:
        return Outcome(NOT_RUN, "no spectrum-control runs with two seeds")
    return _from_units([unit(f"{task}, {method}", e, claim.margin) for (task, method), e in cells.items()], 4)


def cosreg_leaves_isotropy(tables: Tables, model: str, claim: Claim) -> Outcome:
    cells = {k: e for k, e in _calibration_cells(tables, model, claim, "I1_mean", "I1_std").items() if k[1] == "cosreg"}
    if not cells:
        return Outcome(NOT_RUN, "no CosReg runs with two seeds")
    return _from_units([unit(task, e, claim.margin, "within") for (task, _), e in cells.items()], 4)


def isotropy_costs_score(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    base = t[t["method"] == "none"].set_index("task")
    cells = t[t["method"] != "none"]
    d_i1 = cells["I1_mean"].to_numpy() - base.loc[cells["task"], "I1_mean"].to_numpy()
    d_score = cells["difference"].to_numpy()
    if len(cells) < 4 or np.ptp(d_i1) == 0:
        return Outcome(UNTESTABLE, "fewer than four calibrated cells with different isotropy changes")
    estimate = inference.spearman(d_i1, d_score, "task × method cells")
    return _outcome(decide(estimate, claim.margin, "below"), f"rank correlation of the change in I1 (W) with the change in score: {estimate.text(2)}", estimate)


def flow_costly(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    flow = t[t["method"] == "flow"]["time_ratio"].dropna()
    if flow.empty:
        return Outcome(NOT_RUN, "no flow runs")
    estimate = inference.mean_t(flow, "tasks") if len(flow) >= 2 else inference.exact(flow.iloc[0], "one task")
    return _outcome(decide(estimate, claim.margin), f"{estimate.text(2, '×')} the uncalibrated time per epoch", estimate)


RULES: dict[str, Rule] = {
    rule.__name__: rule
    for rule in (
        anisotropic_in_every_layer,
        top_extreme_share,
        model_outliers_exist,
        position_argmax_share,
        propagates_after_first_layernorm,
        layernorm_top_rank,
        probe_low_layers,
        probe_falls_with_depth,
        outlier_top_contributor,
        pe_lowers_perplexity,
        outliers_only_with_pe,
        clipping_lowers_cosine,
        clipping_raises_self_similarity,
        wic_clipping_gain,
        wic_whitening_beats_clipping,
        sts_transform_gain,
        sts_whitening_beats_clipping,
        glove_beats_model,
        supervised_clipping_small,
        rare_tokens_closer,
        few_tokens_cover,
        centering_raises_isotropy,
        postprocessing_helps,
        centering_helps_words,
        scaled_beats_centering,
        inner_product_gains_more,
        spectrum_ratio_collapses,
        top_direction_is_mean,
        no_consistent_gain,
        spectrum_isotropic,
        cosreg_leaves_isotropy,
        isotropy_costs_score,
        flow_costly,
    )
}


def scorecard(profile: str, root: Path | None = None, registry: Path = REGISTRY) -> pd.DataFrame:
    """One row per (claim, model): verdict, the effect with its interval and margin, our number in words, the control,
    the paper's number and where ours comes from. Verdicts that rest on a p-value are Holm-corrected together."""
    tables, rows = Tables(profile, root), []
    for claim in claims(registry):
        base = {"claim_id": claim.id, "paper": claim.paper, "section": claim.section, "claim": claim.claim, "paper_value": claim.paper_value}
        where = {"chapter": claim.chapter or "", "table": claim.table or "", "effect": claim.effect or "", "margin": claim.margin}
        if claim.untestable:
            rows.append({**base, "model": "–", "verdict": UNTESTABLE, "ours": claim.untestable, **where, "source": ""})
            continue
        models = tables.models(claim.chapter, claim.table)
        if not models:
            missing = f"{claim.chapter} has not written {claim.table} for this profile"
            rows.append({**base, "model": "–", "verdict": NOT_RUN, "ours": missing, **where, "source": ""})
            continue
        for model in models:
            outcome = RULES[claim.rule](tables, model, claim)
            e = outcome.estimate
            rows.append(
                {
                    **base,
                    "model": tables.name(model, claim.chapter),
                    "verdict": outcome.verdict,
                    "ours": outcome.ours,
                    **where,
                    "estimate": e.value if e else np.nan,
                    "low": e.low if e else np.nan,
                    "high": e.high if e else np.nan,
                    "p": outcome.p,
                    "control": outcome.control,
                    "source": f"{profile}/{model}/{claim.chapter}/{claim.table}.csv",
                }
            )
    return holm_corrected(pd.DataFrame(rows))


def holm_corrected(card: pd.DataFrame) -> pd.DataFrame:
    """The card with `p_holm`, the Holm-adjusted p-value over every verdict that rests on one; such a verdict whose
    adjusted p-value is not below ALPHA becomes inconclusive (and says so)."""
    card = card.assign(p=card.get("p", pd.Series(np.nan, index=card.index)).astype(float))
    tested = card["p"].notna()
    card["p_holm"] = np.nan
    card.loc[tested, "p_holm"] = inference.holm(card.loc[tested, "p"].to_numpy())
    weak = tested & (card["p_holm"] >= ALPHA)
    card.loc[weak, "ours"] = (
        card.loc[weak, "ours"] + " (" + card.loc[weak, "verdict"] + " before Holm's correction over " + str(int(tested.sum())) + " verdicts)"
    )
    card.loc[weak, "verdict"] = INCONCLUSIVE
    return card
