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
# **Overview.** Measures isotropy I(W), I2 and IsoScore of the input-embedding matrices before and
# after centering, and their word-similarity scores.
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
# isotropic); IsoScore ({cite:t}`rudman2022isoscore`, the `isoscore` package) is a third measure, based on
# the spread of the covariance's eigenvalues. All three are shown side by side so readers can see
# whether they agree. $Z(c)$ is computed in log space (log-sum-exp). An eigen-solver may return
# either sign of an eigenvector, and neither paper fixes one; the book's convention is the largest entry positive. On a
# raw matrix, whose cloud sits away from the origin, the value depends on that choice (the released code of Biš et al.
# takes the signs the solver returns): the isotropy table gives, beside I1, the smallest and largest I1 that any choice
# of signs allows (`I1_sign_low`, `I1_sign_high`), and the scorecard lets no verdict rest on where in that range a value
# falls. After centering the range is narrow.
#
# Then the paper asks whether the more isotropic matrices are *better*: on five word-similarity
# benchmarks (SimLex-999, MEN, WordSim353 similarity and relatedness, Stanford Rare Words), the
# Pearson correlation (× 100) between human scores and the cosine (or inner product) of the two
# words' embeddings, for the raw, centered, centered-scaled (the mean *unit* vector, scaled by
# each embedding's norm, subtracted) and post-processed matrices (Tables 2-3). Pairs in which a
# word is not a single token of the model's vocabulary are left out, so each model is scored on
# its own subset; the table says how many pairs remain.
#
# The measurements of this chapter are `lib/experiments/isotropy_word_similarity.py`.

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet,chapter05:pe,chapter05:nope"  # comma-separated model specs; chapter05:pe/nope are chapter 05's models (its `names`)
seed = 0
device = "auto"
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import math

import numpy as np
import pandas as pd

import lib.book.chapter as ch
from lib.core import paper
from lib.datasets.tasks import WORD_SIMILARITY, word_similarity
from lib.encode.models import load_model
from lib.experiments import isotropy_word_similarity
from lib.measure import transforms, vocabulary

specs, results = ch.begin("12_isotropy_word_similarity", profile, models)
benchmarks = {name: word_similarity(name) for name in WORD_SIMILARITY}
ch.show(pd.DataFrame([{"benchmark": WORD_SIMILARITY[n], "pairs": len(f)} for n, f in benchmarks.items()]), "Word-similarity benchmarks (pairs in the release)")
parameters = ch.parameters("12_isotropy_word_similarity", globals())

# %%
iso, sim = [], []
labelled = {WORD_SIMILARITY[name]: frame for name, frame in benchmarks.items()}
for spec in specs:
    lm = load_model(spec, device=device, dtype=dtype)
    w = vocabulary.embedding_matrix(lm)
    matrices = isotropy_word_similarity.variants(w)
    scores, pair_ids = isotropy_word_similarity.word_similarity(lm, matrices, labelled)  # the last model's pairs are kept (exercise ex-12-d)
    iso.append(isotropy_word_similarity.isotropy_table(matrices, lm.name))
    sim.append(scores)
    results.table(iso[-1], isotropy_word_similarity.ISOTROPY, spec, parameters=parameters)
    results.table(sim[-1], isotropy_word_similarity.WORD_SIMILARITY, spec, parameters=parameters)
    results.table(
        isotropy_word_similarity.paired_differences(matrices, pair_ids, lm.name), isotropy_word_similarity.WORD_DIFFERENCES, spec, parameters=parameters
    )
    del lm
iso, sim = pd.concat(iso, ignore_index=True), pd.concat(sim, ignore_index=True)

# %% [markdown]
# ## Isotropy before and after centering

# %%
ch.show(iso, "Ours: isotropy of the input-embedding matrix (I1 = I(W) and IsoScore: 1 = isotropic; I2: 0 = isotropic), and norm statistics")
ch.show(paper.table("bis2021", "isotropy"), "Biš et al. (2021) Table 1 (paper): I(W) raw, centered (Wc), post-processed (Wr), and norms")

# %% [markdown]
# ## Word similarity
#
# Pearson × 100, per benchmark and averaged over the five (the paper's Table 2 reports the
# average; {numref}`fig-12-word-similarity`). Pairs kept: both words are single tokens of the model.

# %%
kept = sim[sim["variant"] == "raw"].pivot(index="benchmark", columns="model", values="pairs_kept").reset_index()
ch.show(kept, "Pairs kept per benchmark (both words single tokens)", precision=0)
average = sim.groupby(["model", "variant"], sort=False)[["pearson_cosine", "pearson_inner_product"]].mean().reset_index()
ch.show(
    average, "Ours: average Pearson × 100 over the five benchmarks (a benchmark with fewer than three kept pairs is left out of a model's average)", precision=2
)
wide = sim.pivot_table(index=["model", "variant"], columns="benchmark", values="pearson_cosine", sort=False).reset_index()
ch.show(wide, "Ours: Pearson × 100 with cosine, per benchmark", precision=2)
ch.show(paper.table("bis2021", "word_similarity"), "Biš et al. (2021) Table 2 (paper): average Pearson × 100 (cosine, inner product)", precision=2)

# %%
fig = isotropy_word_similarity.grouped_bars(
    average, "variant", ["pearson_cosine", "pearson_inner_product"], labels=["cosine", "inner product"], ylabel="average Pearson × 100"
)
results.figure(
    fig,
    "word_similarity",
    "Average Pearson × 100 of the word-similarity benchmarks for each variant of the embedding matrix, with cosine and inner product.",
)

# %% tags=["hide-input"]
lines = []
for name, part in iso.groupby("model", sort=False):
    p = part.set_index("variant")
    s = average[average["model"] == name].set_index("variant")
    lines.append(
        f"- **{name}**: I(W) {p['I1'].iloc[0]:.2f} raw → {p['I1'].iloc[1]:.2f} centered → {p['I1'].iloc[3]:.3f} post-processed; "
        f"IsoScore {p['IsoScore'].iloc[0]:.3f} → {p['IsoScore'].iloc[1]:.3f} → {p['IsoScore'].iloc[3]:.3f}. Average word-similarity Pearson (cosine) "
        f"{s['pearson_cosine'].iloc[0]:.1f} raw, {s['pearson_cosine'].iloc[1]:.1f} centered, {s['pearson_cosine'].iloc[2]:.1f} centered-scaled, "
        f"{s['pearson_cosine'].iloc[3]:.1f} post-processed."
    )
ch.say("**What our run shows.**\n\n" + "\n".join(lines))

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

# %%
lines = []
for name, part in iso.groupby("model", sort=False):
    p = part.set_index("variant")
    lines.append(
        f"- **{name}**: I(W) {p.loc['raw', 'I1']:.3f} raw → {p.loc['centered', 'I1']:.3f} centered; "
        f"IsoScore {p.loc['raw', 'IsoScore']:.4f} → {p.loc['centered', 'IsoScore']:.4f}."
    )
ch.say(
    "\n".join(lines) + "\n\nI(W) sums exp(cᵀw) over the rows, so a common shift of every row changes it directly. IsoScore is computed "
    "from the covariance matrix, from which the mean has already been subtracted: centering leaves the covariance, and so IsoScore, "
    "exactly as it was."
)

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} How many components to remove?
# :label: ex-12-d
#
# The post-processed variant removes the top D = ⌈d/100⌉ principal components. Biš et al.'s
# released code uses D = 2 for its word-similarity benchmark. Predict whether D = 2 helps word
# similarity more or less than ⌈d/100⌉ for the last model of the loop, then compute it with
# `transforms.RemoveTopPCs(2)`.
# :::

# %% [markdown]
# :::{solution-start} ex-12-d
# :class: dropdown
# :::

# %%
rows = []
for n_components in sorted({2, math.ceil(w.shape[1] / 100)}):
    m = {f"D={n_components}": transforms.RemoveTopPCs(n_components).fit(w).transform(w)}
    values = pd.concat([isotropy_word_similarity.similarity_scores(m, *kept) for kept in pair_ids.values()])["pearson_cosine"].dropna()
    rows.append({"D": n_components, "average Pearson × 100 (cosine)": values.mean() if len(values) else np.nan, "benchmarks": len(values)})
ch.show(pd.DataFrame(rows), f"{list(iso['model'])[-1]}: word similarity after removing the top D principal components (this run)", precision=2)

# %% [markdown]
# Removing more components takes away more of the directions that all words share, but also
# some that separate meanings; which effect wins depends on how the model's variance is spread
# over its top components (see the spectra in {doc}`chapter 10 <10_common_direction>`).
#
# :::{solution-end}
# :::
