# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Isotropy of embedding matrices, and word similarity
#
# :::{admonition} Before you start
# :class: tip
# **Overview.** Does centering make an input-embedding matrix isotropic, and does a more isotropic matrix score
# better on word similarity?
#
# **Read or run first.** {doc}`10_common_direction` and {doc}`11_rare_words`.
# :::
#
# {cite:t}`bis2021too{§5}` measure the isotropy of each model's input-embedding matrix $W$ with
#
# $$I(W) = \frac{\min_{c} Z(c)}{\max_{c} Z(c)}, \qquad Z(c) = \sum_{w} \exp(c^\top w),$$
#
# where the sum runs over the vocabulary and $c$ over the eigenvectors of $W^\top W$, one
# direction each (1 = isotropic), for the raw matrix, the centered matrix, and
# the matrix with the top D = ⌈d/100⌉ principal components also removed ("post-processing" of
# {cite:t}`mu2018allbutthetop`). Centering alone brings most models close to 1 (Table 1).
# {cite:t}`ding2022isotropy` call the same measure I1 and add I2, the standard deviation of $Z(c)$ over its mean (0 =
# isotropic); IsoScore ({cite:t}`rudman2022isoscore`, computed with its authors' package) is a third measure, based on
# the spread of the covariance's eigenvalues. All three are shown side by side so readers can see
# whether they agree. $Z(c)$ is computed in log space (log-sum-exp). An eigen-solver may return
# either sign of an eigenvector, and neither paper fixes one; the book's convention is the largest entry positive. On a
# raw matrix, whose cloud sits away from the origin, the value depends on that choice (the released code of Biš et al.
# takes the signs the solver returns): the isotropy table gives, beside I1, the smallest and largest I1 that any choice
# of signs allows, and the scorecard lets no verdict rest on where in that range a value falls. After centering the
# range is narrow.
#
# Then the paper asks whether the more isotropic matrices are *better*: on five word-similarity
# benchmarks (SimLex-999, MEN, WordSim353 similarity and relatedness, Stanford Rare Words), the
# Pearson correlation (× 100) between human scores and the cosine (or inner product) of the two
# words' embeddings, for the raw, centered, centered-scaled (the mean *unit* vector, scaled by
# each embedding's norm, subtracted) and post-processed matrices (Tables 2-3). Pairs in which a
# word is not a single token of the model's vocabulary are left out, so each model is scored on
# its own subset; the table says how many pairs remain.

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet,chapter05:pe,chapter05:nope"  # comma-separated model specs; chapter05:pe/nope are chapter 05's models (its `names`)
seed = 0
device = "auto"
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import lib.book.chapter as ch
from lib.experiments import isotropy_word_similarity

specs, results = ch.begin("12_isotropy_word_similarity", profile, models)
benchmarks = isotropy_word_similarity.benchmarks()
parameters = ch.parameters("12_isotropy_word_similarity", globals())

# %% tags=["hide-input"]
ch.show(isotropy_word_similarity.benchmarks_table(benchmarks), "Word-similarity benchmarks (pairs in the release)")

# %%
runs = ch.each_model(isotropy_word_similarity.run, specs, labelled=benchmarks, results=results, parameters=parameters, device=device, dtype=dtype)

# %% [markdown]
# ## Isotropy before and after centering

# %% tags=["hide-input"]
ch.show(
    isotropy_word_similarity.isotropy_view(runs),
    "Ours: isotropy of the input-embedding matrix (I1 = I(W) and IsoScore: 1 = isotropic; I2: 0 = isotropic; I1 low and high: "
    "over the signs of the eigenvectors), and the lengths of its rows",
)
ch.show(
    isotropy_word_similarity.paper_table("isotropy"), "Biš et al. (2021) Table 1 (paper): I(W) raw, centered and post-processed, and the lengths of the rows"
)

# %% [markdown]
# ## Word similarity
#
# Pearson × 100, per benchmark and averaged over the five (the paper's Table 2 reports the
# average; {numref}`fig-12-word-similarity`). Pairs kept: both words are single tokens of the model.

# %% tags=["hide-input"]
ch.show(isotropy_word_similarity.kept_table(runs), "Pairs kept per benchmark (both words single tokens)", precision=0)
ch.show(
    isotropy_word_similarity.average_view(runs),
    "Ours: average Pearson × 100 over the benchmarks, cosine and inner product (a benchmark with fewer than three kept pairs is left out)",
    precision=2,
)
ch.show(isotropy_word_similarity.cosine_table(runs), "Ours: Pearson × 100 with cosine, per benchmark", precision=2)
ch.show(
    isotropy_word_similarity.paper_table("word_similarity"), "Biš et al. (2021) Table 2 (paper): average Pearson × 100 (cosine, inner product)", precision=2
)

# %% tags=["hide-input"]
isotropy_word_similarity.figure_word_similarity(runs, results)

# %% tags=["hide-input"]
ch.findings(isotropy_word_similarity.findings(runs))

# %% tags=["hide-input"]
ch.answer(isotropy_word_similarity.answer(runs))

# %% [markdown]
# I(W) and I2 look at the partition function along a handful of directions, IsoScore at the
# whole eigenvalue spectrum of the covariance; because IsoScore is computed from the covariance,
# it does not see the mean at all, so centering cannot change it, while I(W) is dominated by the
# mean. Where the measures disagree, that is the reason.

# %% [markdown]
# ## Exercises
#
# :::{exercise} Two isotropy scores disagree
# :label: ex-12-read
#
# Centering raises I(W) far more than any other change, yet IsoScore does not move at all. Read
# both from the isotropy table for each model, and explain from their definitions why one sees
# the mean and the other does not.
# :::

# %% [markdown]
# :::{solution-start} ex-12-read
# :class: dropdown
# :::

# %% tags=["hide-input"]
ch.say(isotropy_word_similarity.centering_lines(runs))

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} How many components to remove?
# :label: ex-12-d
#
# The post-processed variant removes the top D = ⌈d/100⌉ principal components. Biš et al.'s
# released code uses D = 2 for its word-similarity benchmark. Predict whether D = 2 helps word
# similarity more or less than ⌈d/100⌉ for the last model, then compute it with
# `transforms.RemoveTopPCs(2)`.
# :::

# %% [markdown]
# :::{solution-start} ex-12-d
# :class: dropdown
# :::

# %% tags=["hide-input"]
last = list(runs.values())[-1]
ch.show(isotropy_word_similarity.top_pc_removal(last), f"{last.name}: word similarity after removing the top D principal components (this run)", precision=2)

# %% [markdown]
# Removing more components takes away more of the directions that all words share, but also
# some that separate meanings; which effect wins depends on how the model's variance is spread
# over its top components (see the spectra in {doc}`chapter 10 <10_common_direction>`).
#
# :::{solution-end}
# :::
