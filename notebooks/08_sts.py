# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Sentence similarity (STS), before and after clipping and whitening
#
# :::{admonition} Before you start
# :class: tip
# **Overview.** Do clipping and whitening make the cosine of two sentence vectors track human
# similarity scores (STS) better?
#
# **Read or run first.** {doc}`06_clipping_whitening` (the variants).
# :::
#
# {cite:t}`luo2021positional{§4.3}` mean-pool each layer's token vectors into sentence vectors, score a
# sentence pair by the cosine of its two vectors, and report the Spearman rank correlation
# (× 100) with the human similarity scores, for the best layer of each data set: STS-B (test),
# SICK-R and STS 2012-2016. Clipping the outliers raised most of these numbers (Table 2); the
# thesis adds whitening, which raised them further (Table 4.2). Their baseline is the average of
# 300-dimensional GloVe vectors (as published by {cite:t}`reimers2019sentence`).
#
# Here:
#
# - data: the STS-B **test** split (1,379 pairs), the SICK **test** split (the release's TEST set,
#   relatedness scores; SentEval's and the paper's split) and, as "SICK-R (all pairs)", all 9,840
#   pairs of the SICK release (MTEB's published SICK-R scores use all pairs of its copy, 9,927
#   rows, so that row is the closer one to compare with them), and all subsets of the STS 2012-2016 test sets in SentEval's layout,
#   pooled per year (as MTEB scores them; SentEval's average over each year's subsets is shown
#   beside it), with unscored pairs left out; a parameter can subsample each set;
# - sentence vectors: the mean of all token vectors of a layer, special tokens included: the
#   pooling the sentence-transformers models were trained with, and our reading of the paper's
#   "averaging all subword vectors that comprise a given sentence", which it attributes to
#   {cite:t}`reimers2019sentence`, whose mean pooling covers every token the attention mask does,
#   `[CLS]`/`[SEP]` included ({doc}`chapter 02 <02_outlier_neurons>` counts them likewise); a parameter pools the
#   sentence's own subwords only;
# - **clipped**: zero, in every layer, the model's outlier set detected once by {doc}`chapter 02 <02_outlier_neurons>`,
#   the same set as in chapters 06, 07 and 09 (the paper's protocol: one fixed set per model; a parameter switches to
#   each layer's own flagged dimensions);
# - **whitened**: the thesis's whitening (§3.2.3): per layer, the mean and covariance of the *token* vectors of
#   sentences of the STS-B **training** split (no scores are used; the first table says how many), applied to the pooled sentence vectors of
#   every scored set. Nothing is fitted on the sentences that are scored;
# - **whitened-sentences**: the sentence-level whitening of {cite:t}`su2021whitening`, fitted per layer on the
#   mean-pooled vectors of the same training sentences. Su et al. fit it on the evaluation sentences themselves
#   (transductively); here it is fitted on training sentences like every other transform;
# - best layer: the best *contextual* layer (1-L), as the paper searches layers 1-12; the embedding output (layer 0)
#   is shown in a column of its own;
# - baseline: average **50-dimensional** GloVe 6B vectors (the paper's baseline uses 300-d
#   GloVe, which is not available offline, so the two baseline rows are not the same model).

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet"  # comma-separated model specs
datasets = "stsb,sick,sickall,sts12,sts13,sts14,sts15,sts16"  # comma-separated evaluation sets
max_pairs = 0  # pairs per data set (0: all)
variants = "raw,clipped,whitened,whitened-sentences"  # transforms compared (raw is always included); see the list above
n_fit = 4000  # STS-B training sentences the whitening is fitted on (5,749 training pairs)
clip = "model"  # "model": zero chapter 02's model-level outlier dims in every layer (the paper's base-model protocol); "layer": each layer's flagged dims
pool_special = True  # mean pooling includes [CLS]/[SEP] (the sentence-transformers' pooling, which the paper cites); false: the sentence's subwords only
seed = 0  # which pairs, when max_pairs subsamples
device = "auto"  # "auto" uses CUDA when present
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import lib.book.chapter as ch
from lib.experiments import sts, vector_variants

specs, results = ch.begin("08_sts", profile, models)
data = sts.inputs(datasets, max_pairs, n_fit, seed, variants)
parameters = ch.parameters("08_sts", globals())

# %% tags=["hide-input"]
ch.show(sts.pairs_table(data), f"Scored sentence pairs used; the transforms are fitted on {len(data.fit_sentences):,} sentences of the STS-B training split")

# %% [markdown]
# ## Baseline: average GloVe (50-d)
#
# The GloVe 6B vectors are uncased, so every sentence is lower-cased; tokens are words and single
# punctuation marks (a second column leaves the punctuation out). The table prints the share of
# tokens found in GloVe's vocabulary, the rest being out of vocabulary, so that the distance to the
# published average-GloVe baseline can be read against it.

# %%
baseline = sts.glove_baseline(data, results, parameters)

# %% tags=["hide-input"]
ch.show(
    baseline,
    "Average GloVe 6B 50-d (lower-cased, as the vectors are): Spearman × 100 and the share of tokens found in GloVe's vocabulary, "
    "with punctuation tokens averaged in and without them (words only)",
    precision=2,
)

# %% [markdown]
# ## Contextual models, every layer

# %%
settings = dict(profile=profile, clip=clip, pool_special=pool_special, device=device, dtype=dtype)
runs = ch.each_model(sts.run, specs, data=data, results=results, parameters=parameters, **settings)

# %% tags=["hide-input"]
ch.say(vector_variants.clipping_note([r.clipping for r in runs.values()]))

# %% [markdown]
# ## Best layer per data set
#
# Spearman × 100, with the best layer in parentheses, as in the paper's tables; one row per data
# set, one column per variant. The paper's table (the last one) has BERT-base and RoBERTa-base; the
# offline models are not those models, so compare the direction of the changes (raw → clipped →
# whitened), not the levels.

# %% tags=["hide-input"]
ch.show_each(
    sts.best_tables(runs, data, baseline),
    "Ours, {name}: best Spearman × 100 (layer) per data set and variant, over the contextual layers; first column: averaged GloVe vectors",
)
ch.show(sts.layer0_table(runs, data), "The embedding output (layer 0), not searched above: Spearman × 100 per data set", precision=2)
years = sts.years_table(runs)
if len(years):
    ch.show(
        years,
        "STS 2012-2016, raw vectors at the best layer: Spearman × 100 over all pairs of a year pooled (as above, and as MTEB) "
        "and averaged over the year's subsets (as SentEval reports them)",
        precision=2,
    )
ch.show(
    sts.paper_wide(data),
    "Luo et al. (2021) Table 2 (paper): Spearman × 100 (layer) of BERT-base and RoBERTa-base, raw and clipped, and averaged GloVe 300-d; "
    "whitened: Luo's thesis, Table 4.2 (paper)",
)

# %% [markdown]
# ## The effect by layer
#
# {numref}`fig-08-spearman-by-layer` shows every layer, not only the best: the raw vectors' score beside averaged GloVe,
# and how far each variant moves it, with an interval from resampling the same pairs for both.

# %% tags=["hide-input"]
sts.figure_by_layer(runs, data, baseline, results)

# %% tags=["hide-input"]
ch.findings(sts.findings(runs, baseline))

# %% tags=["hide-input"]
ch.answer(sts.answer(runs, baseline))

# %% [markdown]
# The offline models were trained, after pre-training, precisely to make the cosine of
# mean-pooled sentence vectors track semantic similarity (on data that includes STS-like
# pairs), so their raw last-layer scores are far above BERT-base's and little is left for a
# post-hoc transform to fix; the paper's gains come from models that were never trained for
# this. Every transform here is fitted on STS-B training sentences, so none of them has seen the
# sentences it is scored on.

# %% [markdown]
# ## Exercises
#
# :::{exercise} The best layer, or the last?
# :label: ex-08-layer
#
# Following the paper, the best score of each data set is the maximum over the contextual layers, chosen on the
# scored pairs themselves. For the raw vectors, which layer wins, and how many points would a
# reader lose by always taking the last layer instead?
# :::

# %% [markdown]
# :::{solution-start} ex-08-layer
# :class: dropdown
# :::

# %% tags=["hide-input"]
best_vs_last = sts.best_vs_last(runs)
ch.show(best_vs_last, "Raw vectors: the best layer against the last layer (Spearman × 100, this run)", precision=2)
ch.say(sts.best_vs_last_answer(best_vs_last))

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} How precise is a Spearman score?
# :label: ex-08-pairs
#
# With `-p max_pairs 300` every data set is scored on 300 pairs. Predict the 95% interval of the
# raw last-layer score of each data set at that size, then run
# `python -m lib.edition.runner --chapters 08_sts -p max_pairs 300` and check how many of the
# scores land inside.
# :::

# %% [markdown]
# :::{solution-start} ex-08-pairs
# :class: dropdown
# :::
#
# A Spearman correlation $\rho$ on $n$ pairs has, after Fisher's transform $z = \operatorname{artanh}\rho$, a standard error
# of about $\sqrt{1.06/(n-3)}$ (Fieller, Hartley and Pearson). Around this run's scores:

# %% tags=["hide-input"]
ch.show(sts.spread_at(runs, 300), "Expected spread of a 300-pair score around this run's raw last-layer score", precision=2)

# %% [markdown]
# Compare these widths with the differences between the variants in the tables above: a
# difference much smaller than the interval could not be told apart on 300 pairs.
#
# :::{solution-end}
# :::
