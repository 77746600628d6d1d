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
# **Overview.** Finds the few dimensions whose average value stands far out in every layer, and
# how often one of them holds a vector's largest or smallest value.
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
# layer's average vector, a dimension is an outlier of that layer when it lies at least
# `z_threshold` robust standard deviations from the median of the vector (robust standard
# deviation = 1.4826 × median absolute deviation, which one huge value cannot inflate). A
# dimension is an outlier *of the model* when this holds in at least `min_layer_share` of the
# contextual (non-input) layers. This chapter's average vectors are the book's one record of each model's outlier
# dimensions (`lib/experiments/outlier_set.py`): chapters 3-9 read them from here, so every chapter that clips zeroes
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
import pandas as pd

import lib.book.chapter as ch
from lib.core import paper
from lib.encode.collectors import SentenceExtremes
from lib.encode.models import load_model
from lib.experiments import figure_kinds, outlier_neurons, outlier_set
from lib.measure import outliers

ch.positive_number("z_threshold", z_threshold)
ch.share("min_layer_share", min_layer_share)
specs, results = ch.begin("02_outlier_neurons", profile, models)
sentences = ch.sst2_sentences(n_sentences, seed)
parameters = ch.parameters("02_outlier_neurons", globals())

# %%
stats, reports, facts, last_norms = {}, {}, {}, {}
for spec in specs:
    lm = load_model(spec, device=device, dtype=dtype)
    per_sentence = SentenceExtremes()
    st = outlier_set.statistics(lm, sentences, also=[per_sentence])
    info = {"name": lm.name, "n_layers": lm.n_layers, "width": lm.width, "n_tokens": st.count}
    report = outliers.analyse(st.mean, st.argmin_counts, st.argmax_counts, n_vectors=st.count, z_threshold=z_threshold, min_layer_share=min_layer_share)
    report.pooled = report.pooled.assign(model=lm.name, spec=spec)
    last_norms[lm.name] = outlier_neurons.last_layernorm(lm, report.detected)
    for schema, frame in [
        (outlier_neurons.EXTREMES_BY_LAYER, report.extremes),
        (outlier_neurons.EXTREMES_POOLED, report.pooled),
        (outlier_neurons.EXTREMES_BY_SENTENCE, outlier_neurons.by_sentence(report.pooled, per_sentence)),  # the unit the scorecard resamples
        (outlier_neurons.EXTREMES_BY_LAYER_SENTENCE, outlier_neurons.by_layer_sentence(report.pooled, per_sentence, lm.n_layers)),
        (outlier_neurons.OUTLIER_DIMENSIONS, report.detected),
        (outlier_neurons.MEAN_VECTORS, outlier_set.mean_table(st.mean)),  # the reference every chapter that clips reads
        (outlier_neurons.LAST_LAYERNORM, last_norms[lm.name]),
    ]:
        results.table(frame, schema, spec, parameters=parameters, model_info=info)
    stats[lm.name], reports[lm.name], facts[lm.name] = st, report, info
    del lm

# %% [markdown]
# ## The average vector of every layer
#
# One panel per layer (layer 0 is the embedding output: token + position (+ segment)
# embeddings after LayerNorm). Orange labels mark the dimensions the criterion flags in that
# layer. Compare with the paper's Figures 1-2, where one spike dominates every BERT-base layer.

# %%
for name, st in stats.items():
    fig = figure_kinds.average_vectors(st.mean, reports[name].flags)
    results.figure(
        fig,
        f"average_vectors_{name}",
        f"{name}: the average token vector of every layer ({st.count:,} tokens); flagged dimensions (|robust z| ≥ {z_threshold:g}) marked.",
        tab=name,
    )

# %%
for name, report in reports.items():
    ch.show(
        report.detected,
        f"{name}: dimensions flagged in any layer (|robust z| ≥ {z_threshold:g}); model_outlier = flagged in ≥ {min_layer_share:.0%} of contextual layers",
        precision=1,
        tab=name,
    )

# %% [markdown]
# ## Which dimension is a vector's minimum or maximum
#
# For every layer, the dimension that most often holds a vector's smallest (largest) value, and
# the share of vectors for which it does. A share near 100% means that a single dimension
# decides the extreme of nearly every vector, whatever the token and its context
# ({numref}`fig-02-extreme-dimension-shares`).

# %%
fig = outlier_neurons.extreme_shares({name: report.extremes for name, report in reports.items()})
results.figure(fig, "extreme_dimension_shares", "The share of token vectors whose minimum (maximum) lies in the most frequent dimension, by layer and model.")

# %%
for name, report in reports.items():
    ch.show(report.extremes, f"{name}: most frequent minimum and maximum dimension per layer (% of {facts[name]['n_tokens']:,} vectors)", precision=2, tab=name)

# %% [markdown]
# The paper pools all contextual vectors of all layers (3.68M for BERT-base, 3.59M for
# RoBERTa-base) before counting. The next table does the same for our models and puts the
# paper's figures beside ours where the model is one the paper studied (the `paper` profile).

# %%
paper_dims = paper.table("luo2021", "outlier_dims").rename(columns={"paper_kind": "kind"})
ch.show_beside_paper(
    pd.concat([r.pooled for r in reports.values()], ignore_index=True),
    paper_dims,
    ["kind"],
    columns=["model", "kind", "dim", "percent", "n_vectors", "paper_dim", "paper_percent"],
    caption="Most frequent minimum/maximum dimension over all contextual layers: ours, and the paper's value for the same model",
    paper_columns=["model", "kind", "paper_dim", "paper_percent", "paper_section", "paper_note"],
    paper_caption="Luo et al. (2021), §2 (paper): BERT-base and RoBERTa-base, 10k SST-2 + 10k QQP sentences",
    precision=2,
    name="pooled",
)

# %% tags=["hide-input"]
lines = []
for name, report in reports.items():
    dims = ", ".join(f"{r.dim} ({r.sign}, layers {r.layers})" for r in report.model_outliers.itertuples()) or "none"
    best = report.pooled.loc[report.pooled["percent"].idxmax()]
    quiet = [str(layer) for layer, row in enumerate(report.flags) if not row.any()]
    lines.append(
        f"- **{name}**: model-level outlier dimensions: {dims}. Over all contextual layers, dimension {best['dim']} is the "
        f"{'minimum' if best['kind'] == 'argmin' else 'maximum'} of {best['percent']:.1f}% of vectors. "
        f"Layers in which no dimension is flagged: {', '.join(quiet) or 'none'}."
    )
ch.say("**What our run shows.**\n\n" + "\n".join(lines))

# %% [markdown]
# ## What the last LayerNorm does to the outliers
#
# The last layer's output passes through a LayerNorm whose gain γ and bias β are learned per dimension. Where both are
# about zero on an outlier dimension, that dimension is erased from the model's output: the last layer has no outlier
# there, and clipping it removes nothing. The chapters that clip therefore test their claims only in the layers where
# the clipped dimensions are flagged (chapters 06-09).

# %%
for name, frame in last_norms.items():
    ch.show(frame, f"{name}: the last LayerNorm's γ and β on the model-level outlier dimensions, and the median over all dimensions", precision=4, tab=name)
ch.say("\n".join(outlier_neurons.layernorm_finding(name, frame, facts[name]["n_layers"]) for name, frame in last_norms.items()))

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

# %%
lines = []
for name, report in reports.items():
    best = report.pooled.loc[report.pooled["percent"].idxmax()]
    lines.append(
        f"- **{name}**: dimension {best['dim']} is the {'minimum' if best['kind'] == 'argmin' else 'maximum'} of {best['percent']:.1f}% "
        f"of {int(best['n_vectors']):,} contextual vectors, {96.60 - best['percent']:.1f} points below BERT-base's 96.60% (paper)."
    )
ch.say(
    "\n".join(lines) + "\n\nThe paper's model runs with `-p models bert-base-uncased` (online once); the pooled table then shows its share beside the paper's."
)

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

# %%
rows = []
for name, st in stats.items():
    for t in (z_threshold, 5.0):
        flagged = outliers.detect_outliers(st.mean, t, min_layer_share)
        rows.append({"model": name, "threshold": t, "flagged in some layer": len(flagged), "model-level outliers": int(flagged["model_outlier"].sum())})
ch.show(
    pd.DataFrame(rows),
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

# %%
rows = []
for name, st in stats.items():
    plain = (st.mean - st.mean.mean(axis=1, keepdims=True)) / st.mean.std(axis=1, keepdims=True)
    rows.append(
        {
            "model": name,
            "flags, robust z": int((abs(outliers.robust_z(st.mean)) >= z_threshold).sum()),
            "flags, plain z": int((abs(plain) >= z_threshold).sum()),
            "largest plain |z|": float(abs(plain).max()),
        }
    )
ch.show(pd.DataFrame(rows), f"(layer, dimension) cells flagged at |z| ≥ {z_threshold:g}, summed over layers (this run)", precision=1)

# %% [markdown]
# The plain z-score uses the standard deviation, which the outliers themselves inflate: one huge
# value raises std(m) so much that it can hide itself, and with d dimensions no plain z-score can
# exceed $\sqrt{d-1}$. The median and the median absolute deviation barely move when a few
# dimensions are extreme, so the robust score keeps them visible.
#
# :::{solution-end}
# :::
