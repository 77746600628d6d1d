# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Scorecard: which claims hold, on which models
#
# :::{admonition} Before you start
# :class: tip
# **Overview.** Tests every checkable claim of the three papers on the result tables that the
# other chapters of this edition wrote, model by model, and says how sure each verdict is.
#
# **Read or run first.** The chapters it draws on ({doc}`01_anisotropy` to
# {doc}`13_isotropy_calibration`); it runs last, so that their results exist.
# :::
#
# The papers make claims; the chapters before this one measure the quantities the claims are
# about. This chapter puts the two together. Each claim of {cite:t}`luo2021positional`, Luo's thesis {cite:p}`luo2021thesis`,
# {cite:t}`bis2021too` and {cite:t}`ding2022isotropy` that the book can check is listed in
# `lib/book/claims.yaml` with the result table it is tested on, a rule, the rule's threshold and
# the reason for that threshold. The verdicts below are computed from the tables this edition's
# chapters wrote, nothing else:
#
# - **holds**: the claim's pattern is there, past the threshold;
# - **mixed**: part of it is (some layers, some data sets), or the difference lies within the noise;
# - **does not hold**: the pattern is absent or reversed;
# - **not testable**: the claim needs something the book cannot run offline, or the model lacks
#   what the claim is about (a model without outlier dimensions has none to rank);
# - **not run**: the chapter has not written the table for this edition.
#
# The models are the book's, not the papers': two sentence-transformers and two small models the
# book trained itself (the `paper` profile adds BERT-base and RoBERTa-base for readers who can
# download them). A claim that does not hold for a sentence-transformer is not refuted for
# BERT-base; it says the pattern is not universal. The paper's own number sits beside each
# verdict, in the column labelled "paper".

# %% tags=["parameters"]
profile = "default"  # the edition whose result tables are tested (its results folder)

# %%
from dataclasses import replace

import pandas as pd

import lib.book.chapter as ch
from lib.book import scorecard
from lib.book.results import Results

results = Results("14_scorecard", profile)
parameters = ch.parameters("14_scorecard", globals())
card = scorecard.scorecard(profile)
results.table(card, "scorecard", "scorecard", parameters)
tested = card[card["model"] != "–"]  # claims tested on a model (a model may still lack what a claim is about: not testable)

# %% [markdown]
# ## The verdicts at a glance
#
# One row per claim, one column per model: ✓ holds, ◐ mixed, ✗ does not hold, n/t not testable
# for that model, – not run. The next section gives the number behind every mark.

# %%
marks = {scorecard.HOLDS: "✓", scorecard.MIXED: "◐", scorecard.FAILS: "✗", scorecard.UNTESTABLE: "n/t", scorecard.NOT_RUN: "–"}
glance = tested.assign(mark=tested["verdict"].map(marks)).pivot_table(index="claim_id", columns="model", values="mark", aggfunc="first", sort=False)
ch.show(glance.fillna("–").reset_index(), f"Claims × models in the {profile} edition (✓ holds, ◐ mixed, ✗ does not hold, n/t not testable, – not run)")
counts = card.groupby(["paper", "verdict"]).size().unstack("verdict", fill_value=0).reindex(columns=list(scorecard.VERDICTS), fill_value=0)
ch.show(counts.reset_index(), "Verdicts per paper (one per claim and model; untestable and not-run claims once each)", precision=0)

# %% [markdown]
# ## Every verdict, with the number behind it
#
# `ours` is computed from the table named in the last column (in the results folder of this
# edition, `results/<profile>/<model>/<chapter>/`), `paper` is the paper's own number, and the
# chapter link leads to the page that shows it.

# %% tags=["hide-input"]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


lines = ["| claim | model | verdict | ours | paper | where |", "|---|---|---|---|---|---|"]
for r in tested.itertuples():
    lines.append(
        f"| **{r.claim_id}** ({r.section}): {_cell(r.claim)} | {r.model} | {marks[r.verdict]} {r.verdict} | {_cell(r.ours)} | "
        f"{_cell(r.paper_value)} | [{r.chapter}]({r.chapter}.html), `{r.table}.csv` |"
    )
ch.say("\n".join(lines))

# %% [markdown]
# ## Claims the book cannot test, or has not run

# %% tags=["hide-input"]
rest = card[card["model"] == "–"]
ch.say(
    "\n".join(f"- **{r.claim_id}** ({r.section}, {r.verdict}): {r.claim} Paper: {r.paper_value}. Why: {r.ours}." for r in rest.itertuples())
    or "Every claim in the registry was tested."
)

# %% tags=["hide-input"]
summary = tested.groupby("verdict").size()
ch.say(
    f"**In this edition**: {len(tested)} verdicts on {tested['claim_id'].nunique()} claims and {tested['model'].nunique()} models — "
    + ", ".join(f"{summary.get(v, 0)} {v}" for v in (scorecard.HOLDS, scorecard.MIXED, scorecard.FAILS, scorecard.UNTESTABLE))
    + f"; {int((card['verdict'] == scorecard.NOT_RUN).sum())} claims not run and {int((card['verdict'] == scorecard.UNTESTABLE).sum())} "
    "not testable in this edition."
)

# %% [markdown]
# ## Exercises
#
# :::{exercise} Where the models disagree
# :label: ex-14-read
#
# Find the claims whose verdict differs between models. For each, look up what differs between
# those models (architecture, training objective, size) in the introduction and the chapter the
# claim comes from, and propose which difference could explain the split.
# :::

# %% [markdown]
# :::{solution-start} ex-14-read
# :class: dropdown
# :::

# %%
split = tested.groupby("claim_id")["verdict"].nunique()
disagree = tested[tested["claim_id"].isin(split[split > 1].index)][["claim_id", "model", "verdict", "ours"]]
ch.show(
    disagree if len(disagree) else pd.DataFrame({"result": ["all models agree on every tested claim"]}),
    "Claims with different verdicts across models (this edition)",
)

# %% [markdown]
# Compare the `ours` column of the split claims with the chapter that measured them: a claim
# about position embeddings that holds for one model and not another points at how differently
# their position tables were trained ({doc}`chapter 03 <03_positional_origin>` shows each model's table), one about outlier
# dimensions at whether the model has them at all ({doc}`chapter 02 <02_outlier_neurons>`).
#
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} How much does a verdict depend on its threshold?
# :label: ex-14-threshold
#
# Each rule has one threshold, with its reason in `lib/book/claims.yaml`. Re-evaluate the claim
# `luo2021/extreme-dimension` with a threshold of 40% instead of 50% and say which verdicts
# change. Is the verdict robust if a small change of threshold flips it?
# :::

# %% [markdown]
# :::{solution-start} ex-14-threshold
# :class: dropdown
# :::

# %%
claim = next(c for c in scorecard.claims() if c.id == "luo2021/extreme-dimension")
tables = scorecard.Tables(profile)
rows = []
for model in tables.models(claim.chapter, claim.table):
    for threshold in (claim.threshold, 40.0):
        outcome = scorecard.RULES[claim.rule](tables, model, replace(claim, threshold=threshold))
        rows.append({"model": tables.name(model, claim.chapter), "threshold": threshold, "verdict": outcome.verdict, "ours": outcome.ours})
ch.show(pd.DataFrame(rows) if rows else pd.DataFrame({"result": ["chapter 02 has not run in this edition"]}), "luo2021/extreme-dimension at two thresholds")

# %% [markdown]
# A verdict that flips between 40% and 50% rests on a share close to the bar; the number in the
# `ours` column, not the mark, is what to report.
#
# :::{solution-end}
# :::
