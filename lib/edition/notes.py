"""What the edition adds to its pages: each chapter's note (edition, parameters that differ from the defaults, run, links),
the models caveat, the parameter reference, and the front page's edition note and scorecard summary."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..book import paper, scorecard
from ..core import store
from ..core.profiles import description, profile_parameters
from ..core.sources import chapters, comma_list, declared_parameters, source_file
from ..experiments.verdicts import VERDICTS
from ..settings import REPO_ROOT, cache_dir, data_dir, models_dir, results_dir
from . import costs, launch, reference
from .cache import Entry, digest
from .folders import Edition, commit_text


def changed_parameters(chapter: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The parameters of a run that differ from the chapter's parameters cell (the profile name left out)."""
    declared = declared_parameters(chapter)
    return {k: v for k, v in parameters.items() if k != "profile" and declared.get(k) != v}


def hide_paths(text: str) -> str:
    """A text with this machine's folders replaced by their setting's name, for pages that are published."""
    folders = [
        (results_dir(), "$BOOK_RESULTS_DIR"),
        (models_dir(), "$BOOK_MODELS_DIR"),
        (cache_dir(), "$BOOK_CACHE_DIR"),
        (data_dir(), "$BOOK_DATA_DIR"),
        (Path(sys.prefix), "<python>"),
        (Path(sys.base_prefix), "<python>"),
        (REPO_ROOT, "<repository>"),
        (Path.home(), "~"),
    ]
    for folder, name in sorted(folders, key=lambda f: -len(str(f[0]))):  # the longest first: the venv is inside the repository
        text = text.replace(str(folder), name)
    return text


def run_times(chapter: str) -> str:
    """The chapter's last measured wall time in each of the default and quick editions built on this machine."""
    times = []
    for profile in ("default", "quick"):
        entry = Entry.load(Edition(profile).entry(chapter))
        if entry is not None:
            times.append(f"{duration(entry.facts['seconds'])} in the {profile} edition")
    return ", ".join(times)


def chapter_note(chapter: str, entry: Entry, profile: str, folded_reference: bool = True, student: bool = False) -> str:
    """The one box at the top of an executed chapter: how this page was made (edition, date, commit, run time, models
    measured, parameters changed), with the chapter's parameter reference folded inside (not in print: the PDF has
    every chapter's reference in its re-run chapter, and LaTeX cannot break a long table inside a box)."""
    facts = entry.facts
    changed = changed_parameters(chapter, entry.parts["parameters"])
    settings = ", ".join(f"`{k} = {v!r}`" for k, v in changed.items()) if changed else "none"
    return (
        "::::{admonition} How this page was made\n:class: note\n"
        f"**{profile.capitalize()} edition**, executed {facts['finished'][:16].replace('T', ' ')} UTC at commit {commit_text(facts)}; "
        f"run time on the machine that built it: {run_times(chapter) or duration(facts['seconds'])}. {models_caveat(chapter, entry)}"
        f"Parameters changed from the chapter's defaults: {settings}; the data and model files it read, with their "
        f"checksums, are in the {{ref}}`build report <build-{chapter}>`.{launch_links(chapter, student)}\n\n"
        + (parameters_dropdown(chapter) if folded_reference else "")
        + "::::\n"
    )


def models_caveat(chapter: str, entry: Entry) -> str:
    """A sentence for the page's box when the chapter measured other models than the papers (the paper profile's
    `models`); empty otherwise."""
    declared = declared_parameters(chapter)
    if "models" not in declared:
        return ""
    ran, theirs = (
        comma_list(value)
        for value in (entry.parts["parameters"].get("models", declared["models"]), profile_parameters("paper", chapter).get("models", declared["models"]))
    )
    if set(ran) == set(theirs):
        return ""
    return (
        f"**Not the papers' models**: it measures {', '.join(f'`{m}`' for m in ran)}; the papers measured "
        f"{', '.join(f'`{m}`' for m in theirs)}. Columns headed *paper* hold their numbers on their models, for comparison, "
        "not as our result (the `paper` profile runs this chapter on their models). "
    )


def launch_links(chapter: str, student: bool = False) -> str:
    """Links that open the chapter as a live notebook, for students without the solutions (none without a GitHub
    repository setting)."""
    binder, colab, repo = launch.binder_url(chapter, student), launch.colab_url(chapter, student), launch.repository()
    if repo is None:
        return ""
    source = f"https://github.com/{repo[0]}/blob/{repo[1]}/notebooks/{chapter}.py"
    return f" Run it yourself: [on Binder]({binder}) (CPU), [on Colab]({colab}) (GPU), or from its [source]({source}) (see {{doc}}`../rerun`)."


def edition_note(profile: str) -> str:
    """The line on the front page that says which edition this is."""
    what = description(profile) or f"Its parameters come from `profiles/{profile}.yaml`."
    return (
        f":::{{admonition}} The {profile} edition\n:class: note\nThis is the **{profile}** edition of the book. {what} "
        "Each chapter says when and how it was executed; the {doc}`build report <build_report>` lists times, parameters "
        "and the checksums of every data file and model it read.\n:::\n"
    )


SCORECARD = "14_scorecard"  # the chapter whose table the front page summarises


def scorecard_card(entry: Entry | None) -> pd.DataFrame | None:
    """The scorecard chapter's verdict table, from the file its entry lists and checked against the checksum recorded
    there; None without an entry (the chapter has not run, or its notebook was changed) or when the table is no longer
    the one its run wrote (with one line saying so)."""
    label = f"/{store.CHAPTER}/{SCORECARD}/{scorecard.TABLE}.csv"  # as `Results.table` labels what it wrote
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


def findings_box(chapter: str, card: pd.DataFrame | None) -> str:
    """The box under a chapter's title: what the scorecard of this edition concluded for each claim the chapter tests
    (the claim, the verdict per model, a link to its evidence in chapter 14); empty when the chapter tests none or
    the scorecard has not run."""
    rows = card[card["chapter"] == chapter] if card is not None else None
    if rows is None or rows.empty:
        return ""
    lines = []
    for claim_id, part in rows.groupby("claim_id", sort=False):
        first = part.iloc[0]
        verdicts = "; ".join(f"{r.model}: **{r.verdict}**" if r.on_model else f"**{r.verdict}**" for r in part.itertuples())
        where = f" ({{numref}}`Table %s <{scorecard.claim_label(claim_id)}>`)" if bool(part["on_model"].any()) else ""
        lines.append(f"- {first.claim} → {verdicts}{where}")
    return (
        ":::{admonition} What this chapter's claims came to\n:class: tip\n"
        f"The verdicts of this edition's {{doc}}`scorecard <{SCORECARD}>` on the claims this chapter tests:\n\n" + "\n".join(lines) + "\n:::\n"
    )


def title(chapter: str) -> str:
    for line in source_file(chapter).read_text(encoding="utf-8").splitlines():
        if line.startswith("# # "):
            return line[4:].strip()
    return chapter


def parameters_dropdown(chapter: str) -> str:
    """The chapter's parameter reference, folded, for the box at the top of its page."""
    return (
        ":::{dropdown} Parameters of this chapter\n"
        "Set them with `-p NAME VALUE` (see {doc}`How to re-run this book <../rerun>`); the quick and paper editions' "
        "values are named where they differ from the default.\n\n" + reference.markdown(chapter) + ":::\n"
    )


def all_references() -> str:
    return "\n".join(f"### {title(c)} (`{c}`)\n\n{reference.markdown(c)}" for c in chapters())


def duration(seconds: float) -> str:
    seconds = float(seconds)
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


COST_PROFILES = ("quick", "default", "gpu")  # the editions whose expected times the rerun page shows


def chapter_costs() -> str:
    """The rerun page's table of what each chapter costs in each edition, from the times committed with the book
    (`profiles/costs/`): measured ones as they are, estimates marked ≈, and under the table where each was measured."""
    rows = {profile: costs.load(profile) for profile in COST_PROFILES}
    marks: dict[str, int] = {}

    def cell(row: dict | None) -> str:
        if row is None:
            return "–"
        estimate = row["measured"].startswith("estimate")
        if not estimate:
            marks.setdefault(row["measured"], len(marks) + 1)
        return ("≈ " if estimate else "") + duration(row["seconds"]) + ("" if estimate else f" ({marks[row['measured']]})")

    lines = ["| chapter | " + " | ".join(f"{p} edition" for p in COST_PROFILES) + " |", "|---|" + "---:|" * len(COST_PROFILES)]
    for c in chapters():
        lines.append(f"| {c} | " + " | ".join(cell(rows[p].get(c)) for p in COST_PROFILES) + " |")
        ahead = [{k: r for k, r in rows[p].items() if k.startswith(c + ":")} for p in COST_PROFILES]
        if any(ahead):  # work a parallel build runs as jobs of its own before the chapter (`runner.AHEAD`)
            lines.append("| ↳ its work ahead, in jobs | " + " | ".join(_jobs(a, cell) for a in ahead) + " |")
    totals = [sum(r["seconds"] for r in rows[p].values()) for p in COST_PROFILES]
    lines.append("| **all jobs, in turn** | " + " | ".join(f"**{duration(t)}**" if t else "–" for t in totals) + " |")
    where = "; ".join(f"({n}) {text}" for text, n in marks.items())
    note = "≈: an estimate (`profiles/costs/<profile>.yaml` says from what), until a build measures it."
    return "\n".join(lines) + f"\n\nMeasured: {where or 'nothing yet'}. {note}\n"


def _jobs(rows: dict[str, dict], cell: Callable[[dict | None], str]) -> str:
    """A chapter's work ahead in one cell: how many jobs, the longest, and their sum (Σ)."""
    if not rows:
        return "–"
    longest = max(rows.values(), key=lambda r: r["seconds"])
    total = {**longest, "seconds": sum(r["seconds"] for r in rows.values())}
    return f"{len(rows)} × ≤ {duration(longest['seconds'])}, Σ {cell(total)}"


def edition_time(entries: dict[str, Entry], profile: str) -> str:
    """How long this edition's chapters ran in their last runs, from their entries (a page states times only from the
    build it belongs to); a line saying there is none yet otherwise."""
    if not entries:
        return f"The {profile} edition has no executed chapter yet, so this page cannot say how long it takes."
    total = sum(float(e.facts["seconds"]) for e in entries.values())
    threads = sorted({str(e.facts.get("threads", "?")) for e in entries.values()})
    return (
        f"In this ({profile}) edition, the {len(entries)} executed chapters ran for {duration(total)} in their last runs, "
        f"on {' or '.join(threads)} CPU thread{'' if threads == ['1'] else 's'} each (the {{doc}}`build report <build_report>` gives each chapter's time)."
    )
