"""The verdict logic every rule shares, and the `rule` decorator with which a chapter's experiment module registers the
rules that test its claims (`claims.yaml` names them).

Every rule measures the effect the claim is about, with its uncertainty from the data (an `inference.Estimate`: a paired
test, an exact binomial interval, a t-interval over seeds or data sets), and compares it with a stated margin (the
registry gives the margin and why it matters):

- `holds`: the interval clears the margin in the claimed direction;
- `does not hold`: the interval lies on the other side of the margin (or shows the opposite);
- `inconclusive`: the interval contains the margin: the data cannot tell;
- `mixed`: the claim holds in some units (layers, data sets, tasks) and does not hold in others;
- `not testable` (the claim is outside what the book can run offline, or the model lacks what it is about),
  `not applicable` (the paper makes the claim about another model family: `applies_to`) and `not run` (the chapter
  has not written the table for this profile).

A quantity measured on everything there is (a whole embedding matrix) has no interval; it is compared with the margin
as it is. p-values come from the estimate's own distribution (`inference`). Verdicts that rest on a p-value are
corrected for multiple testing within each paper's family (`holm_corrected`): a verdict whose adjusted p-value is not
below `ALPHA` becomes `inconclusive`, and the scorecard says so in its `corrected` column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core import store
from ..errors import require
from ..measure import inference
from ..measure.inference import Estimate
from ..provenance import is_vouched, record
from ..settings import results_dir
from . import schema

HOLDS, MIXED, FAILS, INCONCLUSIVE, UNTESTABLE, NOT_RUN = "holds", "mixed", "does not hold", "inconclusive", "not testable", "not run"
NOT_APPLICABLE = "not applicable"  # the paper makes the claim about another model family (`Claim.applies_to`)
VERDICTS = (HOLDS, MIXED, FAILS, INCONCLUSIVE, UNTESTABLE, NOT_APPLICABLE, NOT_RUN)


ALPHA = 0.05  # family-wise error rate of the scorecard's p-value verdicts (Holm)


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
    applies_to: tuple[str, ...] = ()  # the model families the paper makes the claim about (models.FAMILIES); empty: every model
    aggregate: str = "all"  # how its units (layers, data sets, tasks) decide it: all | any | mean | most (`aggregate`)
    no_effect: float = 0.0  # the effect's value where there is none (1 for a ratio): the margin's distance is measured from it
    bound: float | None = None  # the most the effect can be (100 for a share in %), if bounded

    def margins_around(self) -> tuple[float, float] | None:
        """A smaller and a larger margin for the sensitivity of a verdict: half the margin's distance from no effect,
        and twice it (for a bounded effect at most halfway from the margin to the bound); None where the margin is no
        effect (a claim about a sign has no distance to scale)."""
        if self.margin is None or self.margin == self.no_effect:
            return None
        distance = self.margin - self.no_effect
        larger = self.no_effect + 2 * distance
        if self.bound is not None:
            larger = min(larger, self.margin + (self.bound - self.margin) / 2)
        return self.no_effect + distance / 2, larger


@dataclass(frozen=True)
class Outcome:
    verdict: str
    ours: str  # the number(s) behind the verdict, in words
    estimate: Estimate | None = None  # the effect the verdict rests on (the weakest unit where there are several)
    p: float | None = None  # two-sided p-value of the verdict reached (None: exact or inconclusive), before Holm
    control: str = ""  # what the control showed
    direction: str = "above"  # the claimed side of the margin ("above", "below", "within")


class Tables:
    """One profile's result tables in the results store (`core.store`), each read back through its declared schema; in
    a book build only those the chapters' current runs vouch for. The profile's results (so far as vouched) are
    recorded as an input of the running chapter, so the scorecard runs again when any vouched result changes."""

    def __init__(self, profile: str, root: Path | None = None):
        self.profile, self.root = profile, root
        record("results", (root or results_dir()) / profile, f"results of the {profile} edition")

    def read(self, model: str, chapter: str, table: str) -> pd.DataFrame | None:
        """The table, checked against its schema, or None when it was not written (or, in a build, is not vouched)."""
        path = store.table_path(self.profile, model, chapter, table, self.root)
        return schema(chapter, table).check(pd.read_csv(path)) if is_vouched(path) else None

    def models(self, chapter: str, table: str) -> list[str]:
        return store.models_with(self.profile, chapter, table, self.root)

    def name(self, model: str, chapter: str) -> str:
        return store.model_name(self.profile, model, chapter, self.root)

    def family(self, model: str, chapter: str) -> str | None:
        """The model's architecture family as a chapter recorded it (`LoadedModel.family`), None if none did."""
        return store.model_fact(self.profile, model, chapter, "family", self.root)


Rule = Callable[[Tables, str, Claim], Outcome]


@dataclass(frozen=True)
class Decision:
    verdict: str
    p: float | None  # two-sided p-value of the verdict reached (None: exact, or inconclusive)
    direction: str = "above"  # the claimed side of the margin


def decide(estimate: Estimate, margin: float, direction: str = "above") -> Decision:
    """An estimate against a margin. "above": the claim is effect > margin; "below": effect < margin; "within": |effect|
    < margin (an equivalence claim). Holds when the 95% interval clears the margin on the claimed side, does not hold
    when it clears it on the other side, inconclusive otherwise; an exact estimate is compared as it is, and one whose
    replicates were identical (`Estimate.unspread`) is inconclusive."""
    v, lo, hi = estimate.value, estimate.low, estimate.high
    if estimate.unspread:  # identical replicates: no uncertainty to decide with, whatever the value
        return Decision(INCONCLUSIVE, None, direction)
    if direction == "within":
        if estimate.exact:
            return Decision(HOLDS if abs(v) <= margin else FAILS, None, direction)
        if -margin < lo and hi < margin:
            return Decision(HOLDS, 2 * max(estimate.p(-margin, "above"), estimate.p(margin, "below")), direction)
        if lo > margin or hi < -margin:
            return Decision(FAILS, 2 * (estimate.p(margin, "above") if lo > margin else estimate.p(-margin, "below")), direction)
        return Decision(INCONCLUSIVE, None, direction)
    require(direction in ("above", "below"), f"unknown direction {direction!r}")
    sign = 1 if direction == "above" else -1
    if estimate.exact:
        return Decision(HOLDS if sign * (v - margin) >= 0 else FAILS, None, direction)
    if (lo > margin) if sign > 0 else (hi < margin):
        return Decision(HOLDS, 2 * estimate.p(margin, direction), direction)
    if (hi < margin) if sign > 0 else (lo > margin):
        return Decision(FAILS, 2 * estimate.p(margin, "below" if sign > 0 else "above"), direction)
    return Decision(INCONCLUSIVE, None, direction)


@dataclass(frozen=True)
class Unit:
    """One layer, data set, task or dimension a claim is tested in, and its decision."""

    name: str
    estimate: Estimate
    decision: Decision
    margin: float = 0.0
    direction: str = "above"
    of: str = "units"  # what the units are, in the plural ("layers", "data sets"): the mean's method names it

    @property
    def clearance(self) -> float:
        """How far the effect lies beyond the margin on the claimed side (negative: on the other side)."""
        v = self.estimate.value
        return {"above": v - self.margin, "below": self.margin - v, "within": self.margin - abs(v)}[self.direction]


def unit(name: str, estimate: Estimate, margin: float, direction: str = "above", of: str = "units") -> Unit:
    return Unit(name, estimate, decide(estimate, margin, direction), margin, direction, of)


def _all_of(ps: list[float | None]) -> float | None:
    """The p-value of a verdict that needs every one of these units (an exact unit, None, is certain): the largest;
    None when every unit is exact, so that an exact verdict never enters Holm's family as p = 0."""
    tested = [p for p in ps if p is not None]
    return max(tested) if tested else None


AGGREGATES = ("all", "any", "mean", "most")  # how a claim tested in several units is decided (`Claim.aggregate`)


def _at_least(ps: list[float | None], u: int, k: int) -> float | None:
    """The p-value that at least `u` of `k` units are beyond the margin, from the sorted p-values of the units that
    are (None, an exact unit, first): the u-th smallest times the k − u + 1 units that could have supplied it
    (Benjamini & Heller's partial conjunction, Bonferroni form); None when the u needed are all exact."""
    needed = ps[:u]
    tested = [p for p in needed if p is not None]
    return min(1.0, max(tested) * (k - u + 1)) if tested else None


def aggregate(units: list[Unit], how: str = "all") -> Decision:
    """A claim tested in several units (layers, data sets, tasks), decided by the statistic the paper states:

    - "all" (in every unit): holds when every unit holds; a unit that does not hold (or is itself mixed) refutes it:
      "does not hold" when no unit holds, "mixed" when some do; otherwise inconclusive;
    - "any" (in some unit): holds when a unit holds, does not hold when every unit does not; otherwise inconclusive;
    - "most" (in more than half): holds when more than half hold, does not hold when so many do not that more than
      half cannot; otherwise inconclusive;
    - "mean" (on average): the mean of the units' estimates (`inference.mean_of`; exact when every unit is) against
      the margin.

    p-values: a verdict that needs every unit, the largest; one that needs u of the k units, the u-th smallest times
    k − u + 1 (`_at_least`: one unit of k is the smallest times k), so that looking at k units is paid for."""
    require(how in AGGREGATES, f"unknown aggregate {how!r}: one of {', '.join(AGGREGATES)}")
    require(len(units) > 0, "a claim needs at least one unit to be decided in")
    direction, k = units[0].direction, len(units)
    if how == "mean":
        return decide(mean_estimate(units), units[0].margin, direction)
    against = (FAILS, MIXED)  # a unit that is itself mixed does not hold in all of its parts
    ps = {
        v: sorted((u.decision.p for u in units if u.decision.verdict in group), key=lambda p: -1.0 if p is None else p)
        for v, group in ((HOLDS, (HOLDS,)), (FAILS, against))
    }
    holding, failing = len(ps[HOLDS]), len(ps[FAILS])
    if how == "any":
        if holding:
            return Decision(HOLDS, _at_least(ps[HOLDS], 1, k), direction)
        return Decision(FAILS, _all_of(ps[FAILS]), direction) if failing == k else Decision(INCONCLUSIVE, None, direction)
    if how == "most":
        needed = k // 2 + 1  # a majority
        if holding >= needed:
            return Decision(HOLDS, _at_least(ps[HOLDS], needed, k), direction)
        if failing > k - needed:  # too few units left that could hold
            return Decision(FAILS, _at_least(ps[FAILS], k - needed + 1, k), direction)
        return Decision(INCONCLUSIVE, None, direction)
    if holding == k:
        return Decision(HOLDS, _all_of(ps[HOLDS]), direction)
    if failing and holding:
        return Decision(MIXED, _all_of([_at_least(ps[HOLDS], 1, k), _at_least(ps[FAILS], 1, k)]), direction)
    if failing:
        return Decision(FAILS, _at_least(ps[FAILS], 1, k), direction)
    return Decision(INCONCLUSIVE, None, direction)


def mean_estimate(units: list[Unit]) -> Estimate:
    """The mean of the units' effects: exact where every unit is, else with the combined standard error of independent
    estimates (`inference.mean_of`, over the units' kind: "data sets", "benchmarks")."""
    over = units[0].of
    if all(u.estimate.exact for u in units):
        return inference.exact(float(np.mean([u.estimate.value for u in units])), f"mean over {len(units)} {over}, each exact")
    return inference.mean_of([u.estimate for u in units], over)


def best_of(units: list[Unit], key: Callable[[Unit], float]) -> tuple[Unit, Decision]:
    """The unit a claim about "some unit" rests on (the largest by `key`), and its decision with the p-value adjusted for
    having picked it among len(units) (Bonferroni)."""
    best = max(units, key=key)
    p = best.decision.p
    return best, Decision(best.decision.verdict, None if p is None else min(1.0, p * len(units)), best.decision.direction)


def outcome(decision: Decision, ours: str, estimate: Estimate | None = None, control: str = "") -> Outcome:
    return Outcome(decision.verdict, ours, estimate, decision.p, control, decision.direction)


def units_text(units: list[Unit], digits: int = 3, unit_label: str = "") -> str:
    """Every unit's estimate, interval and verdict; where the units share one interval method, it is said once:
    "95% intervals paired over 1,000 pairs: layer 1: 0.046 (0.044 to 0.047) → does not hold; layer 2: …"."""
    methods = {u.estimate.method for u in units}
    if len(units) == 1 or len(methods) > 1 or any(u.estimate.exact for u in units):
        return "; ".join(f"{u.name}: {u.estimate.text(digits, unit_label)} → {u.decision.verdict}" for u in units)
    each = (f"{u.name}: {u.estimate.text(digits, unit_label, method=False)} → {u.decision.verdict}" for u in units)
    return f"95% intervals {methods.pop()}: " + "; ".join(each)


def from_units(units: list[Unit], claim: Claim, digits: int = 3, unit_label: str = "", control: str = "") -> Outcome:
    """The claim decided over its units by its `aggregate`, each unit's result shown beside; the estimate reported is
    the mean for "mean", the unit that decides for "any", else the unit closest to failing the claim."""
    decision = aggregate(units, claim.aggregate)
    text = units_text(units, digits, unit_label)
    if claim.aggregate == "mean":
        mean = mean_estimate(units)
        return outcome(decision, f"mean {mean.text(digits, unit_label)}; per {units[0].of.rstrip('s')}: {text}", mean, control)
    pick = max if claim.aggregate == "any" else min
    return outcome(decision, text, pick(units, key=lambda u: u.clearance).estimate, control)


def contextual(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["layer"] >= 1]


def holm_corrected(card: pd.DataFrame) -> pd.DataFrame:
    """The card with `p_holm`, the Holm-adjusted p-value within each paper's family (`paper`) of the verdicts that
    rest on a p-value (`tested`; an exact verdict has none), so that a model or a claim added for one paper changes no
    other paper's verdicts; such a verdict whose adjusted p-value is not below ALPHA becomes inconclusive
    (`corrected`, with the verdict it had in `before_holm`). `family` counts the verdicts each was corrected with."""
    card = card.assign(p=card.get("p", pd.Series(np.nan, index=card.index)).astype(float))
    card["tested"] = card["p"].notna()
    card["p_holm"], card["family"] = np.nan, 0
    for _, rows in card[card["tested"]].groupby("paper", sort=False):
        card.loc[rows.index, "p_holm"] = inference.holm(rows["p"].to_numpy())
        card.loc[rows.index, "family"] = len(rows)
    card["corrected"] = card["tested"] & (card["p_holm"] >= ALPHA)
    card["before_holm"] = card["verdict"]
    card.loc[card["corrected"], "verdict"] = INCONCLUSIVE
    return card
