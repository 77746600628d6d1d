"""The scorecard as the book shows it: p-values as printed, and the verdicts at a glance (the claims are tested in
`lib.experiments.scorecard`)."""

from __future__ import annotations

import math

import pandas as pd

from ..experiments.scorecard import claim_label
from .tables import escape


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
