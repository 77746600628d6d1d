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
# **Overview.** Tests every checkable claim of the three papers on this edition's result tables, model by model,
# with a 95% interval over what was sampled and a margin fixed before the data, and says how sure each verdict is.
#
# **Read or run first.** The chapters it draws on, {doc}`01_anisotropy` to {doc}`13_isotropy_calibration`: it runs last.
# :::

# %% tags=["parameters"]
profile = "default"  # the edition whose result tables are tested (its results folder)

# %% tags=["hide-input"]
import lib.book.chapter as ch
from lib.book import scorecard_view
from lib.experiments import scorecard

results = ch.Results("14_scorecard", profile)
parameters = ch.parameters("14_scorecard", globals())
card = scorecard.run(profile, results, parameters)

# %% tags=["remove-input"]
ch.answer(scorecard.answer(card))

# %% [markdown]
# ## The verdicts at a glance

# %% tags=["remove-input"]
ch.say(scorecard_view.legend() + "\n\n" + "\n\n".join(scorecard_view.matrix(card, key, "sec-14-untested") for key in dict.fromkeys(card["paper"])))

# %% tags=["remove-cell"]
ch.findings(scorecard.findings(card), title="In this edition")  # the page's summary gives them, at its end

# %% [markdown]
# ## Luo, Kulmizev & Mao (2021): positional artefacts

# %% tags=["remove-input", "page-text"]
ch.say(scorecard_view.claim_sections(card, "luo2021"))

# %% [markdown]
# ## Luo (2021): the thesis on anisotropy

# %% tags=["remove-input", "page-text"]
ch.say(scorecard_view.claim_sections(card, "luo2021_thesis"))

# %% [markdown]
# ## Biš, Podkorytov & Liu (2021): too much in common

# %% tags=["remove-input", "page-text"]
ch.say(scorecard_view.claim_sections(card, "bis2021"))

# %% [markdown]
# ## Ding et al. (2022): isotropy calibration

# %% tags=["remove-input", "page-text"]
ch.say(scorecard_view.claim_sections(card, "ding2022"))

# %% [markdown]
# (sec-14-untested)=
# ## Claims without a verdict, and how a verdict is reached

# %% tags=["remove-input"]
ch.say(f"::::{{dropdown}} Each claim, and why it has no verdict on a model\n\n{scorecard.untested_lines(card)}\n::::")

# %% [markdown]
# ::::{dropdown} The rules: margins, intervals, controls, and the correction for many tests
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
# verdict, in its evidence; the verdict is about the pattern on our models.
# ::::

# %% [markdown]
# ## Exercises
#
# :::{exercise} Where the models disagree
# :label: ex-14-read
#
# Find the claims whose verdict differs between models. For each, look up what differs between those models
# (architecture, training objective, size) and propose which difference could explain the split.
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
# Re-evaluate the claim that one dimension is the extreme of most contextual token vectors (`luo2021/extreme-dimension`
# in `lib/experiments/claims.yaml`) at a margin of 40% instead of 50%. Which verdicts change, and is a verdict robust if
# so small a change flips it?
# :::

# %% [markdown]
# :::{solution-start} ex-14-threshold
# :class: dropdown
# :::

# %%
claim = "luo2021/extreme-dimension"
ch.show(scorecard.at_margins(profile, claim, 40.0), f"{card.loc[card['claim_id'] == claim, 'claim'].iloc[0]} Its verdicts at two margins", precision=1)

# %% [markdown]
# A verdict that flips between 40% and 50% rests on a share whose interval reaches across both
# margins, or lies between them; the effect and its interval in the `ours` column, not the mark,
# is what to report. (These verdicts are uncorrected: the exercise re-tests one claim on its own.)
#
# :::{solution-end}
# :::
