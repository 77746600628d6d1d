# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Anisotropy: contextual vectors share a direction
#
# :::{admonition} Before you start
# :class: tip
# **Overview.** Do the token vectors of a layer share one direction (are they *anisotropic*), and in
# which layers most?
#
# **Read or run first.** Nothing: this is where the book starts. The introduction says which
# models the book uses and why.
# :::
#
# If token vectors were spread evenly over all directions (an *isotropic* space), two tokens
# picked at random from unrelated sentences would have a cosine similarity near zero.
# {cite:t}`ethayarajh2019contextual` found that this is not so for contextual models: in BERT, ELMo and GPT-2
# random pairs of words have a clearly positive average cosine in every non-input layer, so
# all vectors sit in a narrow region of the space. {cite:t}`luo2021positional{§4.1}` measure the same
# for BERT-base and RoBERTa-base and find it strongest in higher layers, with RoBERTa's
# average cosine above 0.5 from its first non-input layer on.
#
# This chapter repeats their measurement:
#
# 1. draw 2,000 sentences from the SST-2 training set and form 1,000 disjoint pairs;
# 2. keep one randomly chosen token of each sentence (special tokens such as `[CLS]` are not
#    drawn), and read its vector in every layer, the embedding output included;
# 3. average the cosine similarity of the two tokens of every pair, layer by layer.
#
# The figure also shows a 95% interval for each average, so two curves that differ by less
# than their bands should not be read as different. A second figure projects the last layer's
# token vectors on their first two principal components (Luo's thesis, Fig. 3.1) and marks
# where the origin falls: a cloud far from the origin is the picture of anisotropy.
#
# Which models run depends on the profile (see {doc}`../rerun`): offline the book uses the two
# models whose weights ship as Python packages, all-MiniLM-L6-v2 and all-mpnet-base-v2; the
# `paper` profile runs the paper's BERT-base and RoBERTa-base for readers who can download them.

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet"  # comma-separated model specs
n_sentences = 2000  # SST-2 training sentences (paper: 2,000)
n_pairs = 1000  # disjoint sentence pairs (paper: 1,000)
pca_tokens = 3000  # token vectors in the PCA view
pca_layer = -1  # hidden state for the PCA view; -1 is the last layer
seed = 0
device = "auto"  # "auto" uses CUDA when present
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import lib.book.chapter as ch
from lib.core import paper
from lib.experiments import anisotropy
from lib.measure import geometry

specs, results = ch.begin("01_anisotropy", profile, models)
sentences = anisotropy.inputs(profile, n_sentences, n_pairs, pca_tokens, seed)  # not chapter 02's outlier-selection sample
parameters = ch.parameters("01_anisotropy", globals())

# %% [markdown]
# ## Random token pairs, layer by layer
#
# Every model reads the same sentences. Extraction runs in length-sorted batches and keeps
# only what this chapter needs: the sampled token of each sentence in every layer, and a
# uniform sample of token vectors for the PCA view. {numref}`fig-01-anisotropy-by-layer` shows
# the average cosine layer by layer.

# %%
settings = dict(n_pairs=n_pairs, pca_tokens=pca_tokens, pca_layer=pca_layer, seed=seed, device=device, dtype=dtype)
runs = ch.each_model(anisotropy.run, specs, sentences=sentences, results=results, parameters=parameters, **settings)

# %% tags=["hide-input"]
anisotropy.figure_by_layer(runs, results)

# %% tags=["hide-input"]
ch.show(anisotropy.by_layer_table(runs), "Mean cosine similarity of one token from each of two random sentences, by layer (ours)")
ch.show(
    paper.table("luo2021", "anisotropy_claims"), "What Luo et al. (2021) report for BERT-base and RoBERTa-base (paper; their figure has no printed numbers)"
)

# %% tags=["hide-input"]
ch.findings(anisotropy.findings(runs))

# %% tags=["hide-input"]
ch.answer(anisotropy.answer(runs))

# %% [markdown]
# Both models on the offline profile are sentence-transformers: they were trained further, after
# masked-language-model pre-training, to make cosine similarity of *mean-pooled sentence vectors*
# meaningful, so their layers need not look like BERT-base's; compare the curves with the
# paper's statement above. The paper's own models run in the `paper` profile (it needs internet
# once; see {doc}`../rerun`).
#
# ## The last layer in two dimensions
#
# In {numref}`fig-01-pca-last-layer` each point is one token vector from the sampled sentences, coloured by its position in the
# sentence (0 is the first special token). The orange cross is where the origin projects. The
# panel title gives the length of the mean vector relative to the average vector length: near 0
# for a cloud centred on the origin, near 1 when every vector points the same way.

# %% tags=["hide-input"]
anisotropy.figure_pca(runs, results)

# %% tags=["hide-input"]
ch.say(anisotropy.pca_lines(runs))

# %% [markdown]
# ## Exercises
#
# :::{exercise} Read the figure
# :label: ex-01-read
#
# In the figure of the mean cosine by layer, which contextual layer of each model is the most
# anisotropic? Is its lead over the runner-up larger than the two 95% bands, or could the order
# of the two layers be an accident of the 1,000 sampled pairs?
# :::

# %% [markdown]
# :::{solution-start} ex-01-read
# :class: dropdown
# :::
#
# Read off, for each model, the contextual layer with the highest mean cosine and the runner-up,
# then compare their bands: if the leader's lower end lies above the runner-up's upper end, the
# 1,000 pairs order the two layers; if the bands overlap, another sample of pairs could swap them
# (overlapping 95% bands are a cautious check: two means can differ while their bands still touch).
# This run's answer:

# %% tags=["hide-input"]
ch.say(anisotropy.layer_order(runs))

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} Fewer pairs, wider bands
# :label: ex-01-pairs
#
# Predict how wide the 95% bands become with a quarter of the pairs, then run
# `python -m lib.edition.runner --chapters 01_anisotropy -p n_sentences 500 -p n_pairs 250` and
# compare. Does the ranking of the layers survive?
# :::

# %% [markdown]
# :::{solution-start} ex-01-pairs
# :class: dropdown
# :::
#
# The band's half-width is $1.96\,s/\sqrt{n}$: a quarter of the pairs doubles it ($\sqrt{4} = 2$), whatever the
# model. For this edition's run that means:

# %% tags=["hide-input"]
ch.say(anisotropy.band_widths(runs, 250))

# %% [markdown]
# Layers whose bands already touch (see the previous exercise) may swap places in the smaller
# run; the layers far apart keep their order.
#
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} Centre the vectors first
# :label: ex-01-centre
#
# Anisotropy here means a common direction shared by all vectors. Subtract each layer's mean
# vector from the sampled token vectors and compute the mean cosine again with
# `geometry.pair_cosines` and `geometry.anisotropy_table`. What do you expect, and where in
# `lib` would a reusable version of this step belong?
# :::

# %% [markdown]
# :::{solution-start} ex-01-centre
# :class: dropdown
# :::
#
# Centring removes the common direction, so the mean cosine of random pairs should fall to about
# zero in every layer (a residual of order 1/n remains, because each vector is part of the mean).
# Computed here on the sampled tokens of the last model:

# %%
last = list(runs.values())[-1]
before = geometry.anisotropy_table(geometry.pair_cosines(last.vectors, n_pairs, seed))
after = geometry.anisotropy_table(geometry.pair_cosines(geometry.centered(last.vectors), n_pairs, seed))
ch.say(
    f"**{last.name}**: mean cosine over the contextual layers {before['mean_cosine'].iloc[1:].mean():.3f} raw, "
    f"{after['mean_cosine'].iloc[1:].mean():+.4f} after centring (largest |value| in any layer {after['mean_cosine'].abs().max():.4f})."
)

# %% [markdown]
# A reusable version is in `lib/measure/geometry.py`: `geometry.centered`, which this chapter's
# table already uses for its centred mean cosine, the isotropic baseline the scorecard compares
# the raw mean cosine with. For one layer at a time there is also the transform
# `transforms.Center` ({doc}`chapter 12 <12_isotropy_word_similarity>` uses it).
#
# :::{solution-end}
# :::
