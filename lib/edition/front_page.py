"""What the edition adds to its front page: which edition it is, and the scorecard's verdicts (summed per paper, and
per claim in the box under each chapter's title)."""

from __future__ import annotations

import pandas as pd

from ..book.markdown import escape
from ..book.scorecard_view import MARKS
from ..core import paper, store
from ..core.profiles import description
from ..experiments import scorecard
from ..experiments.verdicts import VERDICTS
from .cache import Entry, digest


def edition_note(profile: str) -> str:
    """The line on the front page that says which edition this is."""
    what = description(profile) or f"Its parameters come from `profiles/{profile}.yaml`."
    return (
        f":::{{admonition}} The {profile} edition\n:class: note\nThis is the **{profile}** edition of the book. {what} "
        "Each chapter says when and how it was executed; the {doc}`build report <build_report>` lists times, parameters "
        "and the checksums of every data file and model it read.\n:::\n"
    )


SCORECARD = scorecard.CHAPTER.name  # the chapter whose table the front page summarises


def scorecard_card(entry: Entry | None) -> pd.DataFrame | None:
    """The scorecard chapter's verdict table, from the file its entry lists and checked against the checksum recorded
    there; None without an entry (the chapter has not run, or its notebook was changed) or when the table is no longer
    the one its run wrote (with one line saying so)."""
    label = f"/{store.CHAPTER}/{SCORECARD}/{scorecard.SCORECARD.name}.csv"  # as `Results.table` labels what it wrote
    record = next((o for o in entry.outputs if o["label"].endswith(label)), None) if entry else None
    if record is None:
        return None
    if digest(record["path"]) != record["sha256"]:
        print(f"{record['path']} is not the table chapter {SCORECARD} wrote in its last run; the pages show no verdicts", flush=True)
        return None
    return pd.read_csv(record["path"])


def scorecard_summary(card: pd.DataFrame | None) -> str:
    """The front page's summary of the scorecard's verdicts per paper; empty without a verified card."""
    if card is None:
        return ""
    counts = card.groupby(["paper", "verdict"]).size().unstack("verdict", fill_value=0)
    columns = [v for v in VERDICTS if v in counts.columns]
    lines = ["| paper | " + " | ".join(columns) + " |", "|:---" + "|---:" * len(columns) + "|"]
    lines += [f"| {paper.name(key)} | " + " | ".join(str(int(row[c])) for c in columns) + " |" for key, row in counts.iterrows()]
    return (
        "## What holds, in this edition\n\n"
        f"The {{doc}}`scorecard <chapters/14_scorecard>` lists {card['claim_id'].nunique()} claims of the papers and tests those it can on "
        "the models of this edition, from the chapters' result tables. Verdicts per paper, one per claim and model "
        "(a claim the book cannot test offline, or has not run, counts once):\n\n" + "\n".join(lines) + "\n\n"
        "The models are the book's, not the papers' (the scorecard names them): a claim that does not hold for a "
        "sentence-transformer or a small model trained here is not thereby refuted for the BERT-base and RoBERTa-base "
        "the papers studied, and one that holds is not confirmed for them.\n\n"
    )


def _claim_lines(chapter: str, card: pd.DataFrame | None) -> list[str]:
    """Per claim the chapter tests: the claim, its verdict on each model and a link to its evidence in chapter 14."""
    rows = card[card["chapter"] == chapter] if card is not None else None
    if rows is None or rows.empty:
        return []
    lines = []
    for claim_id, part in rows.groupby("claim_id", sort=False):
        first = part.iloc[0]
        verdicts = "; ".join(f"{escape(r.model)}: **{r.verdict}**" if r.on_model else f"**{r.verdict}**" for r in part.itertuples())
        where = f" ({{numref}}`Table %s <{scorecard.claim_label(claim_id)}>`)" if bool(part["on_model"].any()) else ""
        lines.append(f"- {first.claim} → {verdicts}{where}")
    return lines


def findings_box(chapter: str, card: pd.DataFrame | None) -> str:
    """The verdicts of this edition's scorecard on the claims the chapter tests, in one line under its title (counted
    by verdict, with their marks; each claim's verdicts are in the chapter's summary); empty when the chapter tests
    none or the scorecard has not run."""
    rows = card[card["chapter"] == chapter] if card is not None else None
    if rows is None or rows.empty:
        return ""
    counts = rows["verdict"].value_counts()
    told = " · ".join(f"{MARKS.get(v, '')} {counts[v]} {v}".strip() for v in VERDICTS if v in counts)
    return (
        f"**Verdicts in this edition**: {told} on {rows['claim_id'].nunique()} claims "
        f"(per claim and model: the {{ref}}`summary <{summary_label(chapter)}>`).\n\n"
    )


def summary_label(chapter: str) -> str:
    return f"summary-{chapter[:2]}"


def summary(chapter: str, card: pd.DataFrame | None, overview: str, measured: str, findings: str) -> str:
    """The section that ends a chapter: what it measured (its overview, the models and sizes of this run) and what it
    found (the scorecard's verdict on each claim it tests, per model; for a chapter that tests none, its findings)."""
    lines = _claim_lines(chapter, card)
    found = (
        "**Found**: the verdicts of this edition's {doc}`scorecard <14_scorecard>` on the claims this chapter tests:\n\n" + "\n".join(lines)
        if lines
        else f"**Found**: {findings.partition(chr(10))[2].strip() or 'no finding was computed (the chapter has not shown its findings)'}"
    )
    return f"({summary_label(chapter)})=\n## Summary\n\n**Measured**: {overview} {measured}\n\n{found}\n"
