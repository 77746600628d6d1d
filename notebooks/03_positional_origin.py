# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Where the outliers come from: position embeddings and LayerNorm
#
# :::{admonition} Before you start
# :class: tip
# **Overview.** Do the outlier dimensions come from the position embeddings and the LayerNorm's
# gains and biases, and from which layer on do they stand out at every position?
#
# **Read or run first.** {doc}`02_outlier_neurons` (the outlier criterion used here).
# :::
#
# {cite:t}`luo2021positional{§3}` look for the source of the outlier dimensions of {doc}`chapter 02 <02_outlier_neurons>` in the
# model's input. A BERT input vector is the sum of a token embedding, a position embedding and a
# segment embedding, passed through a LayerNorm. They report that
#
# - BERT-base's **first position embedding** has two outlier dimensions, dimension 557 among
#   them, and that no other position, token or segment embedding has this pattern; RoBERTa-base's
#   fourth position embedding (its first real token: RoBERTa's position table skips rows for
#   padding) has four, among them 77 and 588, and dimension 588 is the maximum of 99.8% of its
#   position embeddings from there on;
# - the **LayerNorm** parameters single out the same dimensions: in BERT-base γ[557] of each
#   layer's first LayerNorm is among the six largest gains in layers 1-10; in RoBERTa-base
#   β[588] of the first LayerNorm is among the two largest biases in all layers;
# - and so an outlier that the input carries at **some positions** is, after the LayerNorm's
#   gain and bias (shared by every token), present at **every position**, and the residual
#   connections carry it up through the layers.
#
# This chapter repeats the three observations for every model of the profile. The outlier
# dimensions are those that {doc}`chapter 02 <02_outlier_neurons>`'s criterion detects in the model's average vectors
# (recomputed here on the same kind of sample), never typed in. Position numbers below are
# **sequence positions counted from 0** (position 0 is `[CLS]` / `<s>`); the table row a
# position reads is given beside it where the model offsets its table, as RoBERTa and MPNet do.

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet"  # comma-separated model specs
n_sentences = 2000  # SST-2 training sentences for the per-position averages (the outlier set is chapter 02's)
max_positions = 64  # sequence positions shown in the propagation figure
seed = 0
device = "auto"  # "auto" uses CUDA when present
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import lib.book.chapter as ch
from lib.core import paper
from lib.experiments import positional_origin

specs, results = ch.begin("03_positional_origin", profile, models)
sentences = positional_origin.inputs(n_sentences, seed, max_positions)
parameters = ch.parameters("03_positional_origin", globals())

# %%
settings = dict(profile=profile, max_positions=max_positions, device=device, dtype=dtype)
runs = ch.each_model(positional_origin.run, specs, sentences=sentences, results=results, parameters=parameters, **settings)

# %% tags=["hide-input"]
ch.show(
    positional_origin.outlier_overview(runs),
    "The models' outlier dimensions (chapter 02's set, the same in every chapter), and the position-table row read by sequence position 0",
)

# %% [markdown]
# ## Position embeddings
#
# Each panel is one row of the position-embedding table, value by dimension. The model's outlier
# dimensions have a colour each, filled where they lie at least chapter 02's threshold of robust
# standard deviations from that row's median; grey dots are other dimensions that do. Shown:
# the first three sequence positions, the position whose row is most extreme, and position 50.

# %% tags=["hide-input"]
positional_origin.figures_position_embeddings(runs, results)

# %% [markdown]
# The next table asks the same of every embedding table: in what share of rows does any
# dimension stand out, and is one dimension the maximum (minimum) of most rows? "position"
# counts the rows that sequences of up to the model's maximum length use; "position after the
# first" leaves out the `[CLS]`/`<s>` position, as the paper's "from the 4th position on" does
# for RoBERTa.

# %% tags=["hide-input"]
ch.show_each(positional_origin.embedding_tables(runs), "{name}: embedding tables — most frequent maximum/minimum dimension, rows with a flagged dimension")
ch.show(
    positional_origin.argmax_beside_paper(runs),
    "Most frequent maximum dimension of the position embeddings after the first position: ours, and the paper's for the same model "
    "(– where the paper did not study it)",
    precision=1,
)
ch.show(paper.table("luo2021", "position_embedding_claims"), "Luo et al. (2021), §3 (paper): position embeddings of BERT-base and RoBERTa-base")

# %% [markdown]
# ## LayerNorm gains and biases
#
# Every LayerNorm rescales each vector to zero mean and unit variance over its dimensions and
# then applies a gain γ and a bias β that are the same for every token. If γ is large (or β
# pushes in the outlier's direction) in an outlier dimension, every token leaves the LayerNorm
# with that outlier, whatever its position. For each detected outlier dimension and every
# LayerNorm: its rank among the γ values (1 = largest gain) and among the β values (1 = largest
# bias for a positive outlier, smallest for a negative one). Layer 0 is the embedding LayerNorm;
# "first" is the LayerNorm after attention, "second" the one after the feed-forward block.

# %% tags=["hide-input"]
positional_origin.figures_layernorm_ranks(runs, results)
ch.show_each(positional_origin.rank_tables(runs), "{name}: rank of each outlier dimension among the LayerNorm parameters of its layer (1 = top)", precision=0)
ch.show(paper.table("luo2021", "layernorm_claims"), "Luo et al. (2021), §3 (paper): LayerNorm parameters of BERT-base and RoBERTa-base")

# %% [markdown]
# The paper's two bars are about **each layer's first LayerNorm** (after attention): γ among the
# six largest for the first ten of twelve layers (BERT-base), or β among the two
# most extreme in all layers (RoBERTa-base). The table counts, for each outlier dimension, in how
# many of those layers it clears each bar (the first 10/12 of a model's depth for γ), and, as the
# control, how many of the dimensions that were never flagged clear one of the bars in every layer:
# a bar that many ordinary dimensions clear says little about the outliers.

# %% tags=["hide-input"]
ch.show_each(
    positional_origin.criteria_tables(runs),
    "{name}: outlier dimensions against the paper's bars in each layer's first LayerNorm",
)
ch.say(positional_origin.criteria_controls(runs))

# %% [markdown]
# ## From some positions to every position
#
# The paper's argument in one figure per model: for each outlier dimension, how far it stands
# out (robust z) in the average vector of each sequence position, at the LayerNorm's input
# (token + position (+ segment) embeddings), after the embedding LayerNorm (layer 0), and after
# layers 1 and 2. The grey band is where a dimension is *not* flagged. The table below it follows each dimension
# through every layer: the paper says the outlier "is subsequently observed in every layer and token after the first LN
# is applied", and the scorecard asks that of every layer.

# %% tags=["hide-input"]
positional_origin.figures_propagation(runs, results)
ch.show_each(
    positional_origin.propagation_tables(runs),
    "{name}: % of positions at which each outlier dimension is flagged (|robust z| at chapter 02's threshold or above), by stage",
    precision=1,
)

# %% tags=["hide-input"]
ch.findings(positional_origin.findings(runs))

# %% tags=["hide-input"]
ch.answer(positional_origin.answer(runs))

# %% [markdown]
# Read the summary against the paper's story. Where a dimension is flagged at the input at only
# a few positions (or none) but at nearly all positions after layer 1, and ranks near the top of
# a LayerNorm's γ or β, the paper's mechanism (position embedding → shared LayerNorm parameters
# → every token) fits. Where a dimension already dominates almost every position embedding, the
# position table alone puts it in every token; and where the embedding LayerNorm removes it
# again (layer 0) and the first transformer layer restores it, the mechanism runs through the
# first layer's LayerNorms rather than the embedding LayerNorm. The two offline models are
# distilled and fine-tuned relatives of BERT and MPNet, so any of these can happen; the summary
# above states which does.

# %% [markdown]
# ## Exercises
#
# :::{exercise} Which row is position 0?
# :label: ex-03-offset
#
# The table of model-level outliers names, for each model, the row of the position-embedding
# table that sequence position 0 reads. Why is it not always row 0, and why does the book observe
# it with a hook instead of looking it up in a list of model types?
# :::

# %% [markdown]
# :::{solution-start} ex-03-offset
# :class: dropdown
# :::

# %% tags=["hide-input"]
ch.say(positional_origin.offset_lines(runs))

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} Would fewer sentences find the same outliers?
# :label: ex-03-sample
#
# The outlier set comes from {doc}`chapter 02 <02_outlier_neurons>`: the average vector of every layer over all tokens of
# its 10,000 sampled sentences. Predict whether a quarter of the sentences would flag the same model-level outlier
# dimensions, using how far each one's largest robust z-score lies above the threshold. Then run
# `python -m lib.edition.runner --chapters 02_outlier_neurons,03_positional_origin -p n_sentences 2500` (both chapters
# declare `n_sentences`: chapter 02's sample and this chapter's).
# :::

# %% [markdown]
# :::{solution-start} ex-03-sample
# :class: dropdown
# :::

# %% tags=["hide-input"]
ch.say(positional_origin.margin_lines(runs))

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} Where is each outlier in the LayerNorm parameters?
# :label: ex-03-layernorm
#
# From the rank tables, find for each model-level outlier dimension the LayerNorm parameter (γ or β
# of the first or second LayerNorm of a layer) in which it ranks in the top 5 most often, and
# compare with the paper's claims for BERT-base (γ, dimension 557) and RoBERTa-base (β,
# dimension 588).
# :::

# %% [markdown]
# :::{solution-start} ex-03-layernorm
# :class: dropdown
# :::

# %% tags=["hide-input"]
ch.say(positional_origin.top_layernorm_lines(runs))

# %% [markdown]
# :::{solution-end}
# :::
