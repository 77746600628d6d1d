"""The scorecard as the book shows it (the claims are tested in `lib.experiments.scorecard`): per paper a matrix of
claims × the models they were tested on, each cell a coloured badge with the verdict's mark and the number that decided
it; per claim a heading, a sentence per model saying what its verdict means, and the evidence table one click away."""

from __future__ import annotations

import math
import re

import pandas as pd

from ..core import paper
from ..experiments import verdicts
from ..experiments.scorecard import claim_label, counted, counts
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
BADGES = {  # sphinx-design badge colour per verdict; book.css recolours them colour-blind safe (blue holds, vermillion not)
    verdicts.HOLDS: "success",
    verdicts.MIXED: "warning",
    verdicts.FAILS: "danger",
    verdicts.INCONCLUSIVE: "secondary",
    verdicts.UNTESTABLE: "light",
    verdicts.NOT_APPLICABLE: "light",
    verdicts.NOT_RUN: "light",
}
ARROW = re.compile(r"→ (holds|does not hold|inconclusive|mixed)\b")  # a unit's verdict in `ours` (`verdicts.units_text`)
UNIT = re.compile(r"(?:^|; |: )([a-z]+) \d+(?: \([^()]*\))?: ")  # a unit named by a word and a number: "layer 3: ", "dim 7 (…): "
COUNTED = re.compile(r"\bin (\d+) of (\d+) ([a-z]+)")  # a count in words: "in 4 of 7 layers"
MEAN = re.compile(r"\bmean over\b|(?:^|: )mean -?\d")  # a verdict on a mean over units: the mean decides, not the count
WOULD = {verdicts.HOLDS: "hold", verdicts.FAILS: "not hold", verdicts.INCONCLUSIVE: "be inconclusive", verdicts.MIXED: "be mixed"}
NBSP = "\u00a0"  # inside one figure ("< 50%", "(0.084 to 0.128)", "5 of 6"), so that a cell breaks only between its figures


def p_text(p: float, p_holm: float, floor: float, method: str, family: int) -> str:
    """A Holm-adjusted p-value as printed: two digits; or, where the p-value before Holm lies below what its method
    supports (`Estimate.p_floor`), the bound that follows (the floor times the family, Holm's largest factor), rounded
    up to a power of ten, and the method: "< 1e-08 (normal approximation)"."""
    if not p <= floor:
        return f"{p_holm:.2g}"
    bound = min(1.0, floor * max(family, 1))
    return f"< {10.0 ** math.ceil(math.log10(bound)):.0e} ({method})"


def number(value: float, like: float | None = None) -> str:
    """A value with the decimals its size calls for (the size of `like` where given, so that an interval's ends match
    its estimate): "0.106", "45.2", "3"; minus as "−", never "−0.000"."""
    size = abs(value if like is None else like)
    if like is None and float(value).is_integer():  # a count, a share of whole layers
        return f"{int(value):,}".replace("-", "−")
    digits = 0 if size >= 100 else 1 if size >= 10 else 2 if size >= 1 else 3
    text = f"{value:,.{digits}f}"
    return (text.lstrip("-") if float(text.replace(",", "")) == 0 else text).replace("-", "−")


def _unit_of(r) -> str:
    """The effect's unit as printed after a number: "%" for a share in per cent, "×" for a ratio, else nothing."""
    if "(%)" in str(r.effect):
        return "%"
    return "×" if re.search(r"\d×", str(r.ours)) else ""


def _measured(r) -> bool:
    return not (pd.isna(r.estimate) or pd.isna(r.low) or pd.isna(r.high))


def _exact(r) -> bool:
    """A quantity measured on everything there is: no interval around it."""
    return _measured(r) and r.low == r.high == r.estimate


def units(r) -> tuple[int, int, str, int] | None:
    """For a verdict decided over several units (layers, data sets, tasks): how many hold, how many there are, what they
    are ("layers"; "" where their names do not say) and how many cannot tell, read from `ours`; None for a verdict on one
    effect or on a mean over units (its estimate decides)."""
    ours = str(r.ours)
    if MEAN.search(ours):
        return None
    said = ARROW.findall(ours)
    if len(said) >= 2:
        named = UNIT.findall(ours)
        noun = f"{named[0]}s" if len(named) == len(said) and len(set(named)) == 1 else ""
        return said.count(verdicts.HOLDS), len(said), noun, said.count(verdicts.INCONCLUSIVE)
    counted = COUNTED.search(ours) if r.verdict == verdicts.MIXED else None
    return (int(counted[1]), int(counted[2]), counted[3], 0) if counted else None


def _whole(text: str) -> str:
    """A figure no line breaks inside ("< 50%", its spaces non-breaking)."""
    return text.replace(" ", NBSP)


def _margin(r, margin: float | None = None) -> str:
    """A margin as printed, with the effect's unit: "50%", "2×", "−10"."""
    return f"{r.margin if margin is None else margin:g}{_unit_of(r)}".replace("-", "−")


def _against(r) -> str:
    """The effect against its margin: "45.2% < 50%", "1.03× < 2×", "100% ≥ 100%"."""
    value = r.estimate
    if _exact(r):
        side = "≥" if value >= r.margin else "<"
    else:
        side = ">" if r.low > r.margin else "<" if r.high < r.margin else "vs"
    return f"{number(value)}{_unit_of(r)} {side} {_margin(r)}"


def _interval(r, compact: bool = False) -> str:
    """The effect and its interval: "0.106 (0.084 to 0.128)"; `compact` (for a cell), with the decimals that give the
    interval's width two significant digits: "0.8 (−0.4 to 2.0)"."""
    unit, like = _unit_of(r), max(abs(r.estimate), abs(r.low), abs(r.high))
    if compact and r.high > r.low:
        like = 10.0 ** (math.floor(math.log10(r.high - r.low)) + 1)  # a width of 0.37 gives 2 decimals, 2.4 one, 33 none
    return f"{number(r.estimate, like)}{unit} ({number(r.low, like)} to {number(r.high, like)}{unit})"


def deciding(r) -> str:
    """The number that decided a verdict, for its cell: the units it holds in ("5 of 6 layers"), the effect against its
    margin ("45.2% < 50%"), or, where the data cannot tell, the effect and its interval; empty where no number decided
    it (not testable, not applicable, not run)."""
    held = units(r)
    if r.verdict in (verdicts.UNTESTABLE, verdicts.NOT_APPLICABLE, verdicts.NOT_RUN) or (not _measured(r) and held is None):
        return ""
    if r.verdict == verdicts.INCONCLUSIVE and not _exact(r):
        value, _, interval = _interval(r, compact=True).partition(" ")
        return f"{value} {_whole(interval)}"
    if held is None or r.verdict == verdicts.INCONCLUSIVE:
        value, _, against = _against(r).partition(" ")
        return f"{value} {_whole(against)}"
    return f"{held[0]}{NBSP}of{NBSP}{held[1]} {held[2] or 'hold'}"


def badge(verdict: str, text: str = "") -> str:
    """A verdict as a coloured badge (sphinx-design) holding its mark and `text`: {bdg-success}`✓ 5 of 6 layers`."""
    return f"{{bdg-{BADGES[verdict]}}}`{MARKS[verdict]}{NBSP + text if text else ''}`"


def legend() -> str:
    """What the matrices show, in a few lines: what each mark means, what a blank cell means, which number a cell gives."""
    marks = " · ".join(f"{badge(v)} {v}" for v in verdicts.VERDICTS if v != verdicts.NOT_RUN)
    return (
        f":::{{container}} book-legend\n{marks} · blank: not tested on that model. A cell gives the number that decided: the layers, "
        "data sets or tasks the claim holds in, its effect against the margin, or, where the data cannot tell, the effect and its 95% "
        "interval. A claim leads to its section below; the counts in a caption are a verdict per claim and model (a claim without one, "
        "listed under the table, counts once).\n:::"
    )


def claims(card: pd.DataFrame, paper_key: str) -> list[tuple[str, pd.DataFrame]]:
    """The paper's claims tested on a model, in the registry's order, each with its rows (one per model)."""
    tested = card[card["on_model"] & (card["paper"] == paper_key)]
    return list(tested.groupby("claim_id", sort=False))


def matrix_label(paper_key: str) -> str:
    return "tbl-14-verdicts-" + paper_key.replace("_", "-")


def heading_label(claim_id: str) -> str:
    """The anchor of a claim's heading (its id hidden in the address, not shown)."""
    return "claim-" + claim_label(claim_id).removeprefix("tbl-")


def _linked(claim: str, label: str) -> str:
    """A claim's words as a link to its section, the link ending before its first figure ("covers 30%"), so that no
    number in the link reads as the number of what it leads to."""
    words = claim.split(" ")
    cut = next((i for i, w in enumerate(words) if re.search(r"\d", w)), len(words)) or len(words)
    rest = " ".join(words[cut:])
    return f"[{escape(' '.join(words[:cut]))}](#{label})" + (f" {escape(rest)}" if rest else "")


def matrix(card: pd.DataFrame, paper_key: str, untested_at: str) -> str:
    """The paper's verdicts as a numbered MyST table: a row per claim tested on a model (its words, linked to its
    section), a column per model it was tested on, each cell the verdict's badge with its deciding number, blank where
    the claim was not tested on that model; then a line on the paper's claims without a verdict on any model, linked to
    `untested_at` (the label of their list)."""
    rows = claims(card, paper_key)
    models = list(dict.fromkeys(m for _, part in rows for m in part["model"]))
    lines = ["| claim | " + " | ".join(escape(m) for m in models) + " |", "|:---" + "|:---" * len(models) + "|"]
    for claim_id, part in rows:
        by_model = {r.model: badge(r.verdict, deciding(r)) for r in part.itertuples()}
        cells = [by_model.get(m, "") for m in models]
        lines.append(f"| {_linked(part['claim'].iloc[0], heading_label(claim_id))} | " + " | ".join(cells) + " |")
    told = counts(card[card["paper"] == paper_key]).iloc[0]
    caption = f"{paper.name(paper_key)}: " + ", ".join(counted(int(told[v]), v) for v in verdicts.VERDICTS if told[v])
    table = f":::{{table}} {caption}\n:name: {matrix_label(paper_key)}\n:class: book-verdicts\n\n" + "\n".join(lines) + "\n:::" if rows else ""
    rest = card[~card["on_model"] & (card["paper"] == paper_key)]
    if rest.empty:
        return table
    told = ", ".join(f"{n} {v}" for v, n in rest["verdict"].value_counts().items())
    more = f"{len(rest)} {'more ' if rows else ''}{'claim has' if len(rest) == 1 else 'claims have'}"
    return f"{table}\n\n{more} no verdict on a model ({told}): see the {{ref}}`claims without a verdict <{untested_at}>`.".lstrip()


def _flag(value: object) -> bool:
    """A card's true/false column as read back (a missing value: false)."""
    return not pd.isna(value) and bool(value)


def _first_clause(text: str) -> str:
    """A reason's first clause, without its asides: the text up to its first "; " outside parentheses, less each " (…)"
    (the evidence gives it all; "benchmark(s)" stays as it is)."""
    depth, aside, kept = 0, False, []
    for i, ch in enumerate(text):
        if depth == 0 and text.startswith("; ", i):
            break
        if ch == "(" and depth == 0:
            aside = text[i - 1 : i] == " "
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if not (aside and (depth > 0 or ch == ")")):
            kept.append(ch)
    return re.sub(r" +", " ", "".join(kept)).strip()


def _in_units(r, held: tuple[int, int, str, int]) -> str:
    """A verdict over several units in words: "holds in all 6 layers", "holds in 5 of 6 layers, not in 1"."""
    k, n, noun, u = held
    noun = noun or "cases"
    undecided = f", undecided in {u}" if u else ""
    if r.verdict == verdicts.INCONCLUSIVE:
        weakest = f"; the weakest: {_interval(r)} against the margin {_margin(r)}" if _measured(r) else ""
        return f"inconclusive: holds in {k} of {n} {noun}{undecided}{weakest}"
    if r.verdict == verdicts.HOLDS:
        return f"holds in all {n} {noun}" if k == n else f"holds in {k} of {n} {noun}"
    if r.verdict == verdicts.MIXED:
        return f"mixed: holds in {k} of {n} {noun}, not in {n - k - u}{undecided}"
    return f"does not hold: holds in only {k} of {n} {noun}" if k else f"holds in none of the {n} {noun}"


def _on_one(r) -> str:
    """A verdict on one effect in words: where the effect, or its interval, lies against the margin."""
    v, margin = r.verdict, _margin(r)
    if _exact(r):
        side = "reaches" if r.estimate >= r.margin else "is below"
        return f"{v}: {number(r.estimate)}{_unit_of(r)}, measured on all of it, {side} the margin {margin}"
    if v == verdicts.INCONCLUSIVE:
        decide = f"; about {int(math.ceil(r.to_decide)):,} {r.to_decide_of} would decide it" if not pd.isna(r.to_decide) else ""
        return f"inconclusive: {_interval(r)} contains the margin {margin}{decide}"
    side = "above" if r.low > r.margin else "below"
    if not isinstance(r.at_smaller, str) and v == verdicts.HOLDS:  # no margins around it: a claim about a sign
        return f"the direction holds: {_interval(r)} is {side} {margin}; a claim about a sign, not a size"
    return f"{v}: {_interval(r)} is {side} the margin {margin}"


def meaning(r) -> str:
    """What a verdict says about its model, in a clause from the card's numbers: where its effect lies against the
    margin, or in how many units it holds; what the correction over many tests did; where the margin alone decides."""
    v = r.verdict
    if v in (verdicts.UNTESTABLE, verdicts.NOT_APPLICABLE):
        return _first_clause(r.ours if r.ours.startswith(v) else f"{v}: {r.ours}")
    held = units(r)
    if _flag(r.corrected):
        interval = f" ({_interval(r)})" if _measured(r) else ""
        said = f"inconclusive after the correction for the {int(r.family)} tests of its paper: alone it would {WOULD[r.before_holm]}{interval}"
    elif held is not None and (v != verdicts.INCONCLUSIVE or held[3]):
        said = _in_units(r, held)
    elif _measured(r):
        said = _on_one(r)
    else:
        said = v
    if _flag(r.margin_decides):
        other = [(m, at) for m, at in ((r.smaller_margin, r.at_smaller), (r.larger_margin, r.at_larger)) if at != v]
        said += "; " + ", ".join(f"at {_margin(r, m)} it would {WOULD[at]}" for m, at in other)
    return said


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


def _unbroken(text: str) -> str:
    """Text for a table cell, escaped, with a name that ends in a number kept whole ("STS-16": a non-breaking hyphen)."""
    return re.sub(r"(?<=[A-Za-z])-(?=\d)", "\u2011", escape(text))


def _evidence(claim_id: str, rows: pd.DataFrame, paper_key: str) -> str:
    """A claim's verdicts in one line (each model's badge and what its verdict means: `meaning`) that opens its evidence:
    its effect, margin, the paper's number and the chapter that measured it; a numbered table of the verdict on each
    model (our effect, the control, the verdicts at a smaller and a larger margin, p); a link back to the paper's matrix."""
    first = rows.iloc[0]
    said = " · ".join(f"{badge(r.verdict)} **{escape(r.model)}**: {escape(meaning(r))}" for r in rows.itertuples())
    lines = ["| model | verdict | ours | control | at a smaller · larger margin | p (Holm) |", "|:---|:---|:---|:---|:---|---:|"]
    lines += [
        f"| {escape(r.model)} | {MARKS[r.verdict]}\u00a0{r.verdict} | {_unbroken(r.ours)}{_corrected(r)}{escape(_to_decide(r))} | "
        f"{_unbroken(r.control) if isinstance(r.control, str) and r.control else '–'} | {_sensitivity(r)} | {_p(r)} |"
        for r in rows.itertuples()
    ]
    return (
        f"::::{{dropdown}} {said}\n:class-container: book-evidence\n\n"
        f"*Effect*: {escape(first.effect)}; margin {first.margin:g}. *The paper* ({escape(str(first.section))}): {escape(str(first.paper_value))}. "
        f"*Measured in* {{doc}}`{first.chapter}`.\n\n"
        f":::{{table}} {escape(first.claim)} The verdict on each model.\n:name: {claim_label(claim_id)}\n:class: wrap\n\n" + "\n".join(lines) + "\n:::\n\n"
        f"{{ref}}`↑ This paper's verdicts <{matrix_label(paper_key)}>`\n::::"
    )


def claim_sections(card: pd.DataFrame, paper_key: str) -> str:
    """Per claim of the paper tested on a model, in the matrix's order: a heading with its words (its id only in the
    anchor), then its verdicts in words, which open its evidence (`_evidence`)."""
    out = []
    for claim_id, rows in claims(card, paper_key):
        heading = escape(rows["claim"].iloc[0].rstrip("."))
        out.append(f"({heading_label(claim_id)})=\n### {heading}\n\n{_evidence(claim_id, rows, paper_key)}")
    return "\n\n".join(out)
