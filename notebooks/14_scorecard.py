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
# about. This chapter puts the two together: each claim that the book can check is tested on the
# result tables this edition's chapters wrote, model by model, with a 95% interval over what was
# sampled and a margin fixed before the data. The verdicts come first; the claims follow, grouped by
# paper, each with the evidence behind its verdicts; how a verdict is reached is explained last.

# %% tags=["parameters"]
profile = "default"  # the edition whose result tables are tested (its results folder)

# %%
import lib.book.chapter as ch
from lib.book import scorecard_view
from lib.experiments import scorecard

results = ch.Results("14_scorecard", profile)
parameters = ch.parameters("14_scorecard", globals())
card = scorecard.run(profile, results, parameters)

# %% [markdown]
# ## The verdicts at a glance
#
# One row per claim, one column per model: ✓ holds, ◐ mixed, ✗ does not hold, ? inconclusive,
# n/t not testable for that model, n/a not applicable to its model family, – not run. Each claim
# links to its evidence table below, and each evidence table links back here.

# %%
ch.say(
    scorecard_view.glance(
        card,
        scorecard_view.MARKS,
        f"Claims × models in the {profile} edition (✓ holds, ◐ mixed, ✗ does not hold, ? inconclusive, n/t not testable, n/a not applicable, – not run)",
    )
)
ch.show(scorecard.counts(card), "Verdicts per paper (one per claim and model; untestable and not-run claims once each)", precision=0)

# %% tags=["hide-input"]
ch.findings(scorecard.findings(card), title="In this edition")

# %% [markdown]
# ## The claims, paper by paper
#
# Per claim: its words, the effect it is about and the margin it is compared with, the paper's own
# number and the table it comes from (in `results/<profile>/<model>/<chapter>/`); then per model the
# verdict, our effect with its 95% interval in every layer, data set or task it was tested in, what
# the control showed, the verdicts the same rule gives at a smaller and a larger margin ("the margin
# decides" where they differ), and the p-value after Holm's correction where the verdict rests on one.

# %% [markdown]
# ### Luo, Kulmizev & Mao (2021): positional artefacts

# %% tags=["hide-input"]
ch.say("\n\n".join(scorecard_view.claim_tables(card, "luo2021")))

# %% [markdown]
# ### Luo (2021): the thesis on anisotropy

# %% tags=["hide-input"]
ch.say("\n\n".join(scorecard_view.claim_tables(card, "luo2021_thesis")))

# %% [markdown]
# ### Biš, Podkorytov & Liu (2021): too much in common

# %% tags=["hide-input"]
ch.say("\n\n".join(scorecard_view.claim_tables(card, "bis2021")))

# %% [markdown]
# ### Ding et al. (2022): isotropy calibration

# %% tags=["hide-input"]
ch.say("\n\n".join(scorecard_view.claim_tables(card, "ding2022")))

# %% [markdown]
# ## Claims the book cannot test, or has not run

# %% tags=["hide-input"]
ch.say(scorecard.untested_lines(card))

# %% [markdown]
# ## How a verdict is reached
#
# Each claim of {cite:t}`luo2021positional`, Luo's thesis {cite:p}`luo2021thesis`,
# {cite:t}`bis2021too` and {cite:t}`ding2022isotropy` that the book can check is listed in
# `lib/experiments/claims.yaml` with the result table it is tested on, the **effect** the claim is about
# (a difference, a share, a ratio), a **margin** (the size of effect that would matter, and why)
# and, where a claim is about particular dimensions or could be produced by the measurement
# itself, a **control** (random dimensions zeroed instead of the outliers, a probe trained on
# shuffled positions, the centred space). Each effect comes with its 95% interval from the data,
# computed over the unit that was actually sampled: paired over the same sentence pairs or test
# examples, resampled by sentence where a sentence's tokens go together, over seeds for training runs; a claim about
# several data sets gets a verdict per data set, each from a bootstrap over that set's pairs. The
# verdicts above are computed from the tables this edition's chapters wrote, nothing else:
#
# - **holds**: the interval clears the margin in the claimed direction;
# - **does not hold**: the interval lies on the other side of the margin, or shows the opposite;
# - **inconclusive**: the interval contains the margin: these data cannot tell (not the same as
#   "does not hold": absence of evidence is not evidence of absence);
# - **mixed**: the claim holds in some layers, data sets or tasks and does not hold in others (each
#   claim is decided over its units by the statistic its paper states: in every unit, in some, in most, or on
#   average, the mean over data sets with each set's result beside it);
# - **not testable**: the claim needs something the book cannot run offline, the model lacks
#   what the claim is about (a model without outlier dimensions has none to clip), or our run does not reach the
#   claim's conditions (**not testable at this scale**: a probe still improving at its last epoch, a calibration that
#   removed under half of its own penalty, pre-training runs in which no outlier formed), with what would test it;
# - **not applicable**: the paper makes the claim about another model family (a RoBERTa pattern that it
#   says does not exist in BERT is not graded on a BERT-like model);
# - **not run**: the chapter has not written the table for this edition.
#
# A quantity measured on everything there is (the whole embedding matrix, every row of a position
# table) has no sampling interval; it is compared with the margin as it is. The scorecard draws
# many verdicts, so a few would "hold" by chance alone: the verdicts that rest on a p-value are
# corrected together within each paper (Holm's method, family-wise error 5% per paper, so that a
# model or a claim added for one paper changes no other paper's verdicts), and one whose corrected
# p-value is not below 0.05 is reported as inconclusive. Each p-value comes from the distribution
# its interval comes from (an exact binomial test, t with the interval's degrees of freedom, the
# bootstrap's own resamples, or the normal); a verdict resting on the best of several units (layers, dimensions) has its
# p-value multiplied by their number first. For an inconclusive verdict the evidence table says about how much more of
# the sampled unit would decide it (80% power if the effect is as measured), and every verdict is shown beside the
# verdicts the same rule gives at half and at twice the margin, so that a reader sees where the margin alone decides.
#
# The models are the book's, not the papers': two sentence-transformers and small models the
# book trained itself (the `paper` profile adds BERT-base and RoBERTa-base for readers who can
# download them). A claim that does not hold for a sentence-transformer is not refuted for
# BERT-base; it says the pattern is not universal. The paper's own number sits beside each
# verdict, in the column labelled "paper"; the verdict is about the pattern on our models.

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
ch.show(
    scorecard.disagreements(card),
    "Claims with different verdicts across models (this edition); each claim's evidence table above gives the numbers behind them",
)

# %% [markdown]
# Compare the `ours` column of the split claims' evidence tables with the chapter that measured them: a claim
# about position embeddings that holds for one model and not another points at how differently
# their position tables were trained ({doc}`chapter 03 <03_positional_origin>` shows each model's table), one about outlier
# dimensions at whether the model has them at all ({doc}`chapter 02 <02_outlier_neurons>`).
#
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} How much does a verdict depend on its margin?
# :label: ex-14-threshold
#
# Each rule compares an effect with one margin, with its reason in `lib/experiments/claims.yaml`.
# Re-evaluate the claim `luo2021/extreme-dimension` with a margin of 40% instead of 50% and say
# which verdicts change. Is the verdict robust if a small change of margin flips it?
# :::

# %% [markdown]
# :::{solution-start} ex-14-threshold
# :class: dropdown
# :::

# %%
ch.show(scorecard.at_margins(profile, "luo2021/extreme-dimension", 40.0), "luo2021/extreme-dimension at two margins", precision=1)

# %% [markdown]
# A verdict that flips between 40% and 50% rests on a share whose interval reaches across both
# margins, or lies between them; the effect and its interval in the `ours` column, not the mark,
# is what to report. (These verdicts are uncorrected: the exercise re-tests one claim on its own.)
#
# :::{solution-end}
# :::
