"""What the edition adds to its front page and chapters from the scorecard: what holds across the book, the verdicts
summed per paper, a chapter's verdicts counted under its answer, and each claim's verdicts with their numbers in its
Summary."""

from __future__ import annotations

import os
import re
from urllib.parse import quote

import pandas as pd

from ..book.markdown import escape
from ..book.scorecard_view import MARKS
from ..core import paper, store
from ..core.profiles import description
from ..errors import require
from ..experiments import scorecard
from ..experiments.verdicts import VERDICTS
from .cache import Entry, digest


def edition_note(profile: str) -> str:
    """The line on the front page that says which edition this is, then the book's DOI to cite it by: $BOOK_DOI, the
    DOI Zenodo mints for a published release (none when unset or empty; one line when it is not a bare DOI, matched with
    Crossref's pattern). Read here, in the edition layer, not in lib.settings: every chapter, trained model and feature
    cache is keyed by the code of lib/settings.py, and a citation must not execute them again."""
    what = description(profile) or f"Its parameters come from `profiles/{profile}.yaml`."
    doi = os.environ.get("BOOK_DOI", "").strip()
    require(
        not doi or re.fullmatch(r"10\.\d{4,9}/[-._;()/:A-Za-z0-9]+", doi) is not None,
        f"BOOK_DOI={doi!r} is not a DOI: give it as 10.<registrant digits>/<suffix> (e.g. 10.5281/zenodo.<record>, as Zenodo shows it), "
        "without https://doi.org/ or doi: in front and without spaces, or unset it",
    )
    cite = f"\nCite this book: [doi:{escape(doi)}](https://doi.org/{quote(doi, safe='/:;')})\n" if doi else ""
    return (
        f":::{{admonition}} The {profile} edition\n:class: note\nThis is the **{profile}** edition of the book. {what} "
        "Each chapter says when and how it was executed; the {doc}`build report <build_report>` lists times, parameters "
        "and the checksums of every data file and model it read.\n:::\n" + cite
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


def headline(card: pd.DataFrame) -> str:
    """The front page's five sentences: what holds across the book, then per paper, from the scorecard's verdicts."""
    standing = scorecard.claim_standing(card)
    lines = [scorecard.standing_sentence(card)]
    for key, rows in card.groupby("paper", sort=False):
        mine = standing[list(dict.fromkeys(rows["claim_id"]))]
        held, failed = mine[mine.isin(["everywhere", "some"])], mine[mine == "none"]
        claim = rows.drop_duplicates("claim_id").set_index("claim_id")["claim"]
        quoted = {i: f"“{escape(claim[i].rstrip('.'))}”" for i in [*held.index[:1], *failed.index[:1]]}
        example = f", among them {quoted[held.index[0]]}" if len(held) else ""
        against = f"; {len(failed)} hold{'s' if len(failed) == 1 else ''} on none, among them {quoted[failed.index[0]]}" if len(failed) else ""
        lines.append(f"{paper.name(key)}: {len(held)} of {len(mine)} claims hold on at least one model{example}{against}.")
    return " ".join(lines)


def scorecard_summary(card: pd.DataFrame | None) -> str:
    """The front page's summary of the scorecard: what holds across the book (`headline`), then its verdicts counted
    per paper; empty without a verified card."""
    if card is None:
        return ""
    counts = card.groupby(["paper", "verdict"]).size().unstack("verdict", fill_value=0)
    columns = [v for v in VERDICTS if v in counts.columns]
    lines = ["| paper | " + " | ".join(columns) + " |", "|:---" + "|---:" * len(columns) + "|"]
    lines += [f"| {paper.name(key)} | " + " | ".join(str(int(row[c])) for c in columns) + " |" for key, row in counts.iterrows()]
    return (
        "## What holds, in this edition\n\n"
        f"{headline(card)}\n\n"
        f"The {{doc}}`scorecard <chapters/14_scorecard>` gives each verdict with its numbers. Verdicts per paper, one per claim and model "
        "(a claim the book cannot test offline, or has not run, counts once):\n\n" + "\n".join(lines) + "\n\n"
        "The models are the book's, not the papers' (the scorecard names them): a claim that does not hold for a "
        "sentence-transformer or a small model trained here is not thereby refuted for the BERT-base and RoBERTa-base "
        "the papers studied, and one that holds is not confirmed for them.\n\n"
    )


def _claim_lines(chapter: str, card: pd.DataFrame | None) -> list[str]:
    """Per claim the chapter tests: the claim, its verdict on each model with the number that decided it, and a link
    to its evidence in chapter 14."""
    rows = card[card["chapter"] == chapter] if card is not None else None
    if rows is None or rows.empty:
        return []
    lines = []
    for claim_id, part in rows.groupby("claim_id", sort=False):
        first = part.iloc[0]
        verdicts = "; ".join(
            f"{escape(r.model)}: {MARKS.get(r.verdict, '')} **{r.verdict}**" + (f" ({escape(r.ours)})" if isinstance(r.ours, str) and r.ours else "")
            if r.on_model
            else f"**{r.verdict}**"
            for r in part.itertuples()
        )
        where = f" ({{numref}}`Table %s <{scorecard.claim_label(claim_id)}>`)" if bool(part["on_model"].any()) else ""
        lines.append(f"- {escape(first.claim)} → {verdicts}{where}")
    return lines


def findings_box(chapter: str, card: pd.DataFrame | None) -> str:
    """The scorecard's verdicts on the claims the chapter tests, in one line under its answer (counted by verdict,
    with their marks; each claim's verdicts are in the chapter's summary); empty when the chapter tests none or the
    scorecard has not run."""
    rows = card[card["chapter"] == chapter] if card is not None else None
    if rows is None or rows.empty:
        return ""
    counts = rows["verdict"].value_counts()
    told = " · ".join(f"{MARKS.get(v, '')} {scorecard.counted(int(counts[v]), v)}".strip() for v in VERDICTS if v in counts)
    claims = rows["claim_id"].nunique()
    return (
        f"**The {{doc}}`scorecard <14_scorecard>` on this chapter's {claims} claim{'s' if claims != 1 else ''}**: {told} "
        f"(one verdict per claim and model; each with its numbers in the {{ref}}`summary <{summary_label(chapter)}>`).\n\n"
    )


def summary_label(chapter: str) -> str:
    return f"summary-{chapter[:2]}"


def summary(chapter: str, card: pd.DataFrame | None, findings: str, measured: str) -> str:
    """The section that ends a chapter: its key results (its findings, with their numbers), the scorecard's verdict on
    each claim it tests, per model, with the number that decided it, and what this run measured."""
    results = findings.partition("\n")[2].strip() or "No finding was computed (the chapter has not shown its findings)."
    lines = _claim_lines(chapter, card)
    claims = "\n\n**The papers' claims tested here**, as the {doc}`scorecard <14_scorecard>` grades them:\n\n" + "\n".join(lines) if lines else ""
    return f"({summary_label(chapter)})=\n## Summary\n\n**Key results**:\n\n{results}{claims}\n\n{measured}\n"
