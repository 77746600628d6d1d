"""Chapter 14, the claims scorecard: every claim of the papers in `claims.yaml`, tested on the result tables one
profile's chapters wrote, model by model, by the rule its chapter's experiment module registers
(`lib.experiments.verdicts`: what a verdict means, and Holm's correction over the whole card)."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ..core import paper, store
from ..core.declaration import ALL, chapter
from ..core.sources import chapters
from ..core.store import Writer
from ..encode.models import FAMILIES
from ..errors import require
from ..measure import inference
from ..provenance import record
from . import rules, schema
from .verdicts import (
    AGGREGATES,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    MIXED,
    NOT_APPLICABLE,
    NOT_RUN,
    UNTESTABLE,
    VERDICTS,
    Claim,
    Rule,
    Tables,
    holm_corrected,
)

CHAPTER = chapter("14_scorecard", reads=ALL)
SCORECARD = CHAPTER.table(  # the chapter's own table (`store.CHAPTER`'s, not a model's)
    "scorecard",
    "claim_id paper section claim paper_value model on_model verdict ours chapter table effect margin estimate low high p p_floor p_method "
    "control smaller_margin at_smaller larger_margin at_larger margin_decides to_decide to_decide_of source tested p_holm family corrected "
    "before_holm",
)
REGISTRY = Path(__file__).with_name("claims.yaml")
NO_MODEL = "–"  # the model column of a claim with no verdict on a model (`on_model` false): not testable at all, or not run


def claims(path: Path = REGISTRY) -> list[Claim]:
    """The registry, each entry checked: a testable claim names a chapter, table, known rule, threshold and reason. Read
    inside a book build, it is recorded as the chapter's input: an edited registry executes the chapter again."""
    record("data", path, f"claims registry {path.name}")
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    known = {f.name for f in fields(Claim)}
    out = []
    for entry in entries:
        require(set(entry) <= known, f"{path.name}: {entry.get('id')}: unknown fields {sorted(set(entry) - known)}")
        claim = Claim(**{**entry, "applies_to": tuple(entry.get("applies_to", ()))})
        unknown = set(claim.applies_to) - set(FAMILIES)
        require(not unknown, f"{path.name}: {claim.id}: applies_to names no known family: {sorted(unknown)}; families: {', '.join(FAMILIES)}")
        require(claim.aggregate in AGGREGATES, f"{path.name}: {claim.id}: aggregate {claim.aggregate!r} is not one of {', '.join(AGGREGATES)}")
        if claim.untestable is None:
            missing = [f for f in ("chapter", "table", "rule", "effect", "margin", "reason") if getattr(claim, f) is None]
            require(not missing, f"{path.name}: {claim.id} needs {', '.join(missing)} (or `untestable` with a reason)")
            require(claim.chapter in chapters(), f"{path.name}: {claim.id}: no chapter {claim.chapter!r}")
            known_rules = rules(claim.chapter)
            require(
                claim.rule in known_rules,
                f"{path.name}: {claim.id}: {claim.chapter} has no rule {claim.rule!r}; its rules are {', '.join(sorted(known_rules)) or 'none'}",
            )
            schema(claim.chapter, claim.table)  # every scored table has declared columns
        out.append(claim)
    ids = [c.id for c in out]
    require(len(ids) == len(set(ids)), f"{path.name}: claim ids repeat")
    return out


def claim_label(claim_id: str) -> str:
    """The label of a claim's evidence table in chapter 14 (`tbl-14-luo2021-anisotropy`), which other pages link to."""
    return "tbl-14-" + claim_id.replace("/", "-").replace("_", "-")


def rule_of(claim: Claim) -> Rule:
    """The function that tests a claim: the rule its chapter's experiment module registers under the claim's `rule`."""
    return rules(claim.chapter)[claim.rule]


def scorecard(profile: str, root: Path | None = None, registry: Path = REGISTRY) -> pd.DataFrame:
    """One row per (claim, model): verdict, the effect with its interval and margin, our number in words, the control,
    the paper's number and where ours comes from, and the verdicts the same rule gives at a smaller and a larger margin
    (`Claim.margins_around`, before Holm; `margin_decides` where they differ), and about how much of the sampled unit
    would decide the claim at the measured effect (`inference.sample_to_decide`: `to_decide` of `to_decide_of`).
    Verdicts that rest on a p-value are Holm-corrected within each paper."""
    tables, rows = Tables(profile, root), []
    for claim in claims(registry):
        base = {"claim_id": claim.id, "paper": claim.paper, "section": claim.section, "claim": claim.claim, "paper_value": claim.paper_value}
        where = {"chapter": claim.chapter or "", "table": claim.table or "", "effect": claim.effect or "", "margin": claim.margin}
        if claim.untestable:
            rows.append({**base, "model": NO_MODEL, "on_model": False, "verdict": UNTESTABLE, "ours": claim.untestable, **where, "source": ""})
            continue
        models = tables.models(claim.chapter, claim.table)
        if not models:
            missing = f"{claim.chapter} has not written {claim.table} for this profile"
            rows.append({**base, "model": NO_MODEL, "on_model": False, "verdict": NOT_RUN, "ours": missing, **where, "source": ""})
            continue
        rule, around = rule_of(claim), claim.margins_around()
        for model in models:
            family = tables.family(model, claim.chapter)
            if claim.applies_to and family is not None and family not in claim.applies_to:
                ours = f"the paper makes this claim about {' and '.join(claim.applies_to)} models; this one is {family}"
                rows.append(
                    {**base, "model": tables.name(model, claim.chapter), "on_model": True, "verdict": NOT_APPLICABLE, "ours": ours, **where, "source": ""}
                )
                continue
            outcome = rule(tables, model, claim)
            smaller, larger = (rule(tables, model, replace(claim, margin=m)).verdict for m in around) if around else (None, None)
            e = outcome.estimate
            rows.append(
                {
                    **base,
                    "model": tables.name(model, claim.chapter),
                    "on_model": True,
                    "verdict": outcome.verdict,
                    "ours": outcome.ours,
                    **where,
                    "estimate": e.value if e else np.nan,
                    "low": e.low if e else np.nan,
                    "high": e.high if e else np.nan,
                    "p": outcome.p,
                    "p_floor": e.p_floor()[0] if e else np.nan,
                    "p_method": e.p_floor()[1] if e else "",
                    "control": outcome.control,
                    "smaller_margin": around[0] if around else np.nan,
                    "at_smaller": smaller,
                    "larger_margin": around[1] if around else np.nan,
                    "at_larger": larger,
                    "margin_decides": smaller is not None and len({smaller, outcome.verdict, larger}) > 1,
                    "to_decide": inference.sample_to_decide(e, claim.margin, outcome.direction) if e else None,
                    "to_decide_of": e.of if e else "",
                    "source": f"{profile}/{model}/{claim.chapter}/{claim.table}.csv",
                }
            )
    return holm_corrected(pd.DataFrame(rows))


def run(profile: str, results: Writer, parameters: dict) -> pd.DataFrame:
    """The scorecard of one edition (`scorecard`), written as the chapter's table."""
    card = scorecard(profile)
    results.table(card, SCORECARD, store.CHAPTER, parameters=parameters)
    return card


def counts(card: pd.DataFrame) -> pd.DataFrame:
    """Verdicts per paper: one per claim and model; untestable and not-run claims once each."""
    table = card.groupby(["paper", "verdict"]).size().unstack("verdict", fill_value=0).reindex(columns=list(VERDICTS), fill_value=0)
    return table.rename(index=paper.name).reset_index()


def untested_lines(card: pd.DataFrame) -> str:
    """The claims with no verdict on a model (not testable offline, or their chapter has not run), in words: the claim,
    its paper and section, the paper's value, and why it has none (a chapter not run: the chapter, linked by its title)."""
    rest = card[~card["on_model"]]
    why = {NOT_RUN: lambda r: f"Not run: {{doc}}`{r.chapter}` has not written its table in this edition", UNTESTABLE: lambda r: f"Not testable: {r.ours}"}
    lines = [f"- {r.claim} *{paper.name(r.paper)}, {r.section}; the paper's value: {r.paper_value}.* {why[r.verdict](r)}." for r in rest.itertuples()]
    return "\n".join(lines) or "Every claim in the registry was tested."


PLURAL = {HOLDS: "hold", FAILS: "do not hold"}  # a verdict's words after a count other than one


def counted(n: int, verdict: str) -> str:
    """A count of verdicts in words: "1 holds", "2 hold", "3 do not hold", "2 inconclusive"."""
    return f"{n} {PLURAL.get(verdict, verdict) if n != 1 else verdict}"


def _some(n: int, noun: str) -> str:
    """ "1 claim", "2 claims"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def claim_standing(card: pd.DataFrame) -> pd.Series:
    """Per claim (by id, in the card's order) where it stands across the models it was tested on: "everywhere" (it
    holds on every model with a decided verdict and none undecided), "some" (it holds, or is mixed, on some), "none"
    (decided, and it holds on none), "undecided" (inconclusive wherever it was tested) or "untested"."""
    out = {}
    for claim_id, rows in card.groupby("claim_id", sort=False):
        seen = set(rows["verdict"])
        decided = seen & {HOLDS, MIXED, FAILS}
        if seen == {HOLDS}:
            out[claim_id] = "everywhere"
        elif decided & {HOLDS, MIXED}:
            out[claim_id] = "some"
        elif decided:
            out[claim_id] = "none"
        else:
            out[claim_id] = "undecided" if INCONCLUSIVE in seen else "untested"
    return pd.Series(out, dtype=object)


def standing_sentence(card: pd.DataFrame) -> str:
    """What holds across the edition in one sentence: the claims by where they stand (`claim_standing`)."""
    told = claim_standing(card).value_counts()
    models = card.loc[card["on_model"], "model"].nunique()
    return (
        f"This edition tests {told.sum()} claims of the papers on {models} model{'s' * (models != 1)}: {told.get('everywhere', 0)} hold on every "
        f"model they were decided on, {told.get('some', 0)} on some, {told.get('none', 0)} on none; {told.get('undecided', 0)} stay inconclusive "
        f"at this edition's sample sizes and {told.get('untested', 0)} cannot be tested here."
    )


def answer(card: pd.DataFrame) -> list[str]:
    """The chapter's answer: `standing_sentence`, then per paper how many of its claims hold on at least one model and
    how many on none."""
    standing = claim_standing(card)
    per_paper = []
    for key, rows in card.groupby("paper", sort=False):
        mine = standing[list(dict.fromkeys(rows["claim_id"]))]
        per_paper.append(f"{paper.name(key)} {mine.isin(['everywhere', 'some']).sum()} of {len(mine)} (on none: {(mine == 'none').sum()})")
    return [standing_sentence(card), "Claims that hold on at least one model, per paper: " + "; ".join(per_paper) + "."]


def findings(card: pd.DataFrame) -> list[str]:
    """The edition's verdicts counted: by kind, how many rest on a p-value and were corrected, how many the margin
    decides, and the claims without a verdict on a model."""
    tested, rest = card[card["on_model"]], card[~card["on_model"]]
    summary = tested.groupby("verdict").size()
    families = ", ".join(f"{paper.name(key)}: {n}" for key, n in card[card["tested"]].groupby("paper", sort=False).size().items())
    return [
        f"{_some(len(tested), 'verdict')} on {_some(tested['claim_id'].nunique(), 'claim')} and {_some(tested['model'].nunique(), 'model')} — "
        + ", ".join(counted(int(summary.get(v, 0)), v) for v in (HOLDS, MIXED, FAILS, INCONCLUSIVE))
        + f", {summary.get(UNTESTABLE, 0)} not testable on that model and {summary.get(NOT_APPLICABLE, 0)} not applicable to its family"
        + f". {int(card['tested'].sum())} of them rest on a p-value, corrected within each paper (Holm; {families}); "
        + f"{int(card['corrected'].sum())} became inconclusive by the correction. "
        + f"At a smaller or a larger margin, {int(tested['margin_decides'].sum())} of the {_some(len(tested), 'verdict')} would differ. "
        + f"{_some(len(rest), 'claim')} {'has' if len(rest) == 1 else 'have'} none "
        + f"({int((rest['verdict'] == NOT_RUN).sum())} because their chapter has not run in this edition, "
        + f"{int((rest['verdict'] == UNTESTABLE).sum())} because the book cannot test them offline at all)."
    ]


def disagreements(card: pd.DataFrame) -> pd.DataFrame:
    """Exercise ex-14-read: the claims whose verdict differs between models."""
    tested = card[card["on_model"]]
    split = tested.groupby("claim_id")["verdict"].nunique()
    rows = [
        {"claim": rows["claim"].iloc[0], "verdicts": "; ".join(f"{m}: {v}" for m, v in zip(rows["model"], rows["verdict"]))}
        for _, rows in tested[tested["claim_id"].isin(split[split > 1].index)].groupby("claim_id", sort=False)
    ]
    return pd.DataFrame(rows) if rows else pd.DataFrame({"result": ["all models agree on every tested claim"]})


def at_margins(profile: str, claim_id: str, margin: float) -> pd.DataFrame:
    """Exercise ex-14-threshold: one claim's verdict on every model at its own margin and at `margin` (uncorrected)."""
    claim = next(c for c in claims() if c.id == claim_id)
    tables, rows = Tables(profile), []
    for model in tables.models(claim.chapter, claim.table):
        for m in (claim.margin, margin):
            outcome = rule_of(claim)(tables, model, replace(claim, margin=m))
            rows.append({"model": tables.name(model, claim.chapter), "margin": m, "verdict": outcome.verdict, "ours": outcome.ours})
    return pd.DataFrame(rows) if rows else pd.DataFrame({"result": [f"chapter {claim.chapter[:2]} has not run in this edition"]})
