"""The scorecard as the book shows it: p-values as printed, and the verdicts at a glance (the claims are tested in
`lib.experiments.scorecard`)."""

from __future__ import annotations

import math

import pandas as pd

from ..experiments import verdicts
from ..experiments.scorecard import claim_label
from ..measure import inference
from .markdown import escape

MARKS = {
    verdicts.HOLDS: "✓",
    verdicts.MIXED: "◐",
    verdicts.FAILS: "✗",
    verdicts.INCONCLUSIVE: "?",
    verdicts.UNTESTABLE: "n/t",
    verdicts.NOT_APPLICABLE: "n/a",
    verdicts.NOT_RUN: "–",
}


def p_text(p: float, p_holm: float, floor: float, method: str, family: int) -> str:
    """A Holm-adjusted p-value as printed: two digits; or, where the p-value before Holm lies below what its method
    supports (`Estimate.p_floor`), the bound that follows (the floor times the family, Holm's largest factor), rounded
    up to a power of ten, and the method: "< 1e-08 (normal approximation)"."""
    if not p <= floor:
        return f"{p_holm:.2g}"
    bound = min(1.0, floor * max(family, 1))
    return f"< {10.0 ** math.ceil(math.log10(bound)):.0e} ({method})"


def glance(card: pd.DataFrame, marks: dict[str, str], caption: str) -> str:
    """The verdicts at a glance as a MyST table: one row per claim tested on a model (the claim's text, linked to its
    evidence table), one column per model with the verdict's mark."""
    tested = card[card["on_model"]]
    models = list(dict.fromkeys(tested["model"]))
    lines = ["| claim | " + " | ".join(escape(m) for m in models) + " |", "|:---" + "|:---:" * len(models) + "|"]
    for claim_id, rows in tested.groupby("claim_id", sort=False):
        verdict = dict(zip(rows["model"], rows["verdict"]))
        link = f"{{numref}}`Table %s <{claim_label(claim_id)}>`"
        cells = [marks.get(verdict[m], "–") if m in verdict else "–" for m in models]
        lines.append(f"| {escape(rows['claim'].iloc[0])} ({link}) | " + " | ".join(cells) + " |")
    widths = " ".join(["40"] + [str(max(1, 60 // max(1, len(models))))] * len(models))
    return f":::{{table}} {caption}\n:name: tbl-14-glance\n:widths: {widths}\n\n" + "\n".join(lines) + "\n:::"


def _p(r) -> str:
    """The Holm-adjusted p-value; for a verdict on a quantity measured on everything there is (no sample, so no test)
    "none: measured on all", "–" for one that rests on no test (inconclusive, not testable)."""
    if pd.isna(r.p_holm):
        return "none: measured on all" if r.verdict in (verdicts.HOLDS, verdicts.FAILS, verdicts.MIXED) else "–"
    return p_text(r.p, r.p_holm, r.p_floor, r.p_method, r.family)


def _corrected(r) -> str:
    """What a verdict was before Holm's correction made it inconclusive."""
    return f" ({r.before_holm} before Holm's correction over the {r.family} verdicts of its paper)" if r.corrected else ""


def _to_decide(r) -> str:
    """For an inconclusive verdict: about how much of the sampled unit would decide it at the effect measured."""
    if r.verdict != verdicts.INCONCLUSIVE or pd.isna(r.to_decide):
        return ""
    n = int(math.ceil(r.to_decide))
    return f"; deciding it would take about {n:,} {r.to_decide_of} ({inference.POWER:.0%} power if the effect is as measured)"


def _sensitivity(r) -> str:
    """The verdicts at a smaller and a larger margin, flagged where the margin alone decides."""
    if r.verdict == verdicts.NOT_APPLICABLE:
        return "–"
    if not isinstance(r.at_smaller, str):
        return "– (a claim about a sign)"
    return f"{r.at_smaller} at {r.smaller_margin:g} · {r.at_larger} at {r.larger_margin:g}" + (" (**the margin decides**)" if r.margin_decides else "")


def claim_tables(card: pd.DataFrame, paper_key: str | None = None) -> list[str]:
    """Per claim tested on a model (of one paper, given its key): the claim's words as its heading, its effect, margin,
    the paper's number and source, a numbered MyST table of the verdict on each model with our effect, the control, the
    verdicts at a smaller and a larger margin and p, and a link back to the verdicts at a glance."""
    out = []
    tested = card[card["on_model"] & ((card["paper"] == paper_key) if paper_key else True)]
    for claim_id, rows in tested.groupby("claim_id", sort=False):
        first = rows.iloc[0]
        lines = ["| model | verdict | ours | control | at a smaller · larger margin | p (Holm) |", "|:---|:---|:---|:---|:---|---:|"]
        lines += [
            f"| {escape(r.model)} | {MARKS[r.verdict]}\u00a0{r.verdict} | {escape(r.ours)}{_corrected(r)}{escape(_to_decide(r))} | "
            f"{escape(r.control) if isinstance(r.control, str) and r.control else '–'} | {_sensitivity(r)} | {_p(r)} |"
            for r in rows.itertuples()
        ]
        out.append(
            f"**{escape(first.claim)}** ({first.section}; claim `{claim_id}`)\n\n*Effect*: {escape(first.effect)}; margin {first.margin:g}. "
            f"*Paper*: {escape(str(first.paper_value))}. *From*: chapter {{doc}}`{first.chapter[:2]} <{first.chapter}>`, `{first.table}.csv`.\n\n"
            f"::::{{table}} {escape(first.claim)} The verdict on each model.\n:name: {claim_label(claim_id)}\n:class: wrap\n"
            "\n" + "\n".join(lines) + "\n::::\n\n{ref}`↑ The verdicts at a glance <tbl-14-glance>`"
        )
    return out
