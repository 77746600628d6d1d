# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Outlier neurons
#
# :::{admonition} Before you start
# :class: tip
# **Overview.** Do a few dimensions stand far out of the average vector in every layer, and does one
# of them hold the largest or smallest value of most token vectors?
#
# **Read or run first.** {doc}`01_anisotropy` (what a common direction is).
# :::
#
# {cite:t}`luo2021positional{§2}` average all token vectors of a layer and find, in every layer of
# BERT-base and RoBERTa-base, a few dimensions whose average lies far from all others. They
# also count, for every token vector, which dimension holds its smallest and its largest value:
# in BERT-base dimension 557 is the minimum of 96.60% of all contextual vectors; in RoBERTa-base
# dimension 588 is the maximum of all of them and dimension 77 the minimum of 88.19%.
#
# The paper encodes 10,000 sentences from the SST-2 training set and 10,000 from QQP. QQP is not
# part of this book's offline data (its licence does not allow redistribution), so the book
# uses SST-2 alone; the paper itself notes that "any dataset would illustrate our findings".
# The number of sentences is a parameter.
#
# The statistics are computed in one streaming pass: per layer the running mean and, per
# dimension, how often it is a vector's minimum or maximum. No token vector is kept, so the
# sample size is limited by time, not memory. Special tokens (`[CLS]`, `[SEP]`, `<s>`, `</s>`)
# are counted like all other tokens, as in the paper's "all subword vectors".
#
# **Which dimensions are outliers** is decided by the code, not typed in. The criterion: in a
# layer's average vector, a dimension is an outlier of that layer when it lies at least a
# threshold number of robust standard deviations from the median of the vector (robust standard
# deviation = 1.4826 × median absolute deviation, which one huge value cannot inflate). A
# dimension is an outlier *of the model* when this holds in at least a set share of the
# contextual (non-input) layers; the captions below give both values. This chapter's average vectors are the book's
# one record of each model's outlier dimensions: chapters 3-9 read them from here, so every chapter that clips zeroes
# the same set, as the paper zeroes 557 (BERT-base) or 77 and 588 (RoBERTa-base) everywhere.

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet"  # comma-separated model specs
n_sentences = 10000  # SST-2 training sentences (paper: 10,000 SST-2 + 10,000 QQP)
z_threshold = 10.0  # robust z-score that flags a dimension in a layer
min_layer_share = 0.5  # share of contextual layers in which a model-level outlier is flagged
seed = 0
device = "auto"  # "auto" uses CUDA when present
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import lib.book.chapter as ch
from lib.experiments import outlier_neurons

specs, results = ch.begin("02_outlier_neurons", profile, models)
sentences = outlier_neurons.inputs(n_sentences, seed, z_threshold, min_layer_share)
parameters = ch.parameters("02_outlier_neurons", globals())

# %%
settings = dict(z_threshold=z_threshold, min_layer_share=min_layer_share, device=device, dtype=dtype)
runs = ch.each_model(outlier_neurons.run, specs, sentences=sentences, results=results, parameters=parameters, **settings)

# %% [markdown]
# ## The average vector of every layer
#
# One panel per layer (layer 0 is the embedding output: token + position (+ segment)
# embeddings after LayerNorm). Each outlier dimension of the model has a colour of its own,
# filled in the layers where the criterion flags it; grey dots are dimensions flagged in that
# layer alone. Compare with the paper's Figures 1-2, where one spike dominates every BERT-base layer.

# %% tags=["hide-input"]
outlier_neurons.figures_average_vectors(runs, z_threshold, results)

# %% tags=["hide-input"]
ch.show_each(
    {name: r.report.detected for name, r in runs.items()},
    f"{{name}}: dimensions flagged in any layer (|robust z| ≥ {z_threshold:g}); outlier of the model: flagged in ≥ {min_layer_share:.0%} of contextual layers",
    precision=1,
)

# %% [markdown]
# ## Which dimension is a vector's minimum or maximum
#
# For every layer, the dimension that most often holds a vector's smallest (largest) value, and
# the share of vectors for which it does. A share near 100% means that a single dimension
# decides the extreme of nearly every vector, whatever the token and its context
# ({numref}`fig-02-extreme-dimension-shares`).

# %% tags=["hide-input"]
outlier_neurons.figure_extreme_shares(runs, results)

# %% tags=["hide-input"]
ch.show_each(
    {name: outlier_neurons.extremes_view(r.report.extremes) for name, r in runs.items()},
    "{name}: most frequent minimum and maximum dimension per layer (% of its token vectors)",
    precision=2,
)

# %% [markdown]
# The paper pools all contextual vectors of all layers (3.68M for BERT-base, 3.59M for
# RoBERTa-base) before counting. The next table does the same for our models and puts the
# paper's figures beside ours where the model is one the paper studied (the `paper` profile).

# %% tags=["hide-input"]
ch.show_beside_paper(
    outlier_neurons.pooled_of(runs),
    outlier_neurons.paper_dims(),
    ["kind"],
    columns=["model", "kind", "dim", "percent", "n_vectors", "paper_dim", "paper_percent"],
    caption="Most frequent minimum/maximum dimension over all contextual layers: ours, and the paper's value for the same model",
    paper_columns=["model", "kind", "paper_dim", "paper_percent", "paper_section", "paper_note"],
    paper_caption="Luo et al. (2021), §2 (paper): BERT-base and RoBERTa-base, 10k SST-2 + 10k QQP sentences",
    precision=2,
    name="pooled",
)

# %% tags=["hide-input"]
ch.findings(outlier_neurons.findings(runs))

# %% tags=["hide-input"]
ch.answer(outlier_neurons.answer(runs))

# %% [markdown]
# ## What the last LayerNorm does to the outliers
#
# The last layer's output passes through a LayerNorm whose gain γ and bias β are learned per dimension. Where both are
# about zero on an outlier dimension, that dimension is erased from the model's output: the last layer has no outlier
# there, and clipping it removes nothing. The chapters that clip therefore test their claims only in the layers where
# the clipped dimensions are flagged (chapters 06-09).

# %% tags=["hide-input"]
ch.show_each(
    {name: outlier_neurons.layernorm_view(r.last_norm) for name, r in runs.items()},
    "{name}: the last LayerNorm's γ and β on the model-level outlier dimensions, and the median over all dimensions",
    precision=4,
)
ch.say(outlier_neurons.layernorm_lines(runs))

# %% [markdown]
# The pattern the paper describes for BERT-base and RoBERTa-base (one or two dimensions that
# dominate the average vector of every layer) is the thing to look for here. The two offline
# models are distilled or further-trained relatives of BERT and MPNet, and their sentence-level
# fine-tuning reshapes the top layer, so the shares need not reach the paper's 96.60%. Where
# the outliers of our models come from is the subject of the next chapters: the paper traces
# them to position embeddings and LayerNorm.

# %% [markdown]
# ## Exercises
#
# :::{exercise} Read the table
# :label: ex-02-read
#
# In the pooled table ({numref}`tbl-02-pooled`), which dimension is the minimum or maximum of the largest share of all
# contextual vectors in each model? How far is that share from BERT-base's 96.60% for dimension
# 557, and what would you need to run to compare with the paper's own model?
# :::

# %% [markdown]
# :::{solution-start} ex-02-read
# :class: dropdown
# :::

# %% tags=["hide-input"]
ch.say(outlier_neurons.gap_to_paper(runs))

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} A lower threshold
# :label: ex-02-threshold
#
# The criterion flags a dimension whose robust z-score reaches 10. Predict how many dimensions
# each model has flagged in at least one layer with a threshold of 5, and how many of them are
# model-level outliers. Then run
# `python -m lib.edition.runner --chapters 02_outlier_neurons -p z_threshold 5`.
# :::

# %% [markdown]
# :::{solution-start} ex-02-threshold
# :class: dropdown
# :::
#
# The layer means are already in memory, so the count at any threshold is one call away (it is
# what the run with `-p z_threshold 5` tabulates):

# %% tags=["hide-input"]
ch.show(
    outlier_neurons.flags_at(runs, (z_threshold, 5.0), min_layer_share),
    "Flagged dimensions at this chapter's threshold and at 5 (this run's layer means)",
)

# %% [markdown]
# A lower threshold flags more dimensions in single layers. A dimension becomes a model-level
# outlier only when it crosses the threshold in at least half of the contextual layers, so compare
# the two count columns: the second grows only with dimensions that stand out in many layers.
#
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} Why a robust z-score?
# :label: ex-02-robust
#
# `lib.measure.outliers.robust_z` measures a dimension's distance from the median in units of
# the median absolute deviation. Write the plain z-score, (m − mean(m)) / std(m), for each
# layer's mean vector and count the dimensions it flags at the same threshold. Which criterion
# finds more, and why?
# :::

# %% [markdown]
# :::{solution-start} ex-02-robust
# :class: dropdown
# :::

# %% tags=["hide-input"]
ch.show(
    outlier_neurons.robust_vs_plain(runs, z_threshold), f"(layer, dimension) cells flagged at |z| ≥ {z_threshold:g}, summed over layers (this run)", precision=1
)

# %% [markdown]
# The plain z-score uses the standard deviation, which the outliers themselves inflate: one huge
# value raises std(m) so much that it can hide itself, and with d dimensions no plain z-score can
# exceed $\sqrt{d-1}$. The median and the median absolute deviation barely move when a few
# dimensions are extreme, so the robust score keeps them visible.
#
# :::{solution-end}
# :::
