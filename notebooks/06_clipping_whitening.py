# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Clipping and whitening: what they do to the geometry
#
# :::{admonition} Before you start
# :class: tip
# **Overview.** Does zeroing the outlier dimensions (clipping), or whitening, make token vectors
# less alike and a word's vectors more alike across its sentences?
#
# **Read or run first.** {doc}`01_anisotropy` and {doc}`02_outlier_neurons`.
# :::
#
# If a few outlier dimensions make all vectors point the same way, removing them should make the
# space less anisotropic. {cite:t}`luo2021positional{§4.1}` **clip** the outliers (set them to zero) and
# find that the average cosine of random words drops close to zero, and that a word's
# **self-similarity** ({cite:t}`ethayarajh2019contextual`: the average cosine between the word's vectors in
# different sentences, minus the layer's anisotropy) *rises* after clipping (Fig. 6). Luo's
# thesis (§3.2.3) adds **whitening** {cite}`su2021whitening`: subtract the mean and rotate and scale by
# the covariance's SVD, so that the vectors have identity covariance; the average cosine is then
# near zero in every layer.
#
# How the transforms are fitted here (the same in chapters 06-09):
#
# - **clipped**: the model's outlier dimensions, detected once by {doc}`chapter 02 <02_outlier_neurons>` (its criterion and
#   its SST-2 sentences; flagged in at least half of the contextual layers), are set to zero in every layer: the
#   paper's protocol for base models (§4.1), which zeroes one fixed set per model (557 in BERT-base; 77 and 588 in
#   RoBERTa-base) everywhere. The same set is clipped in chapters 06-09. A parameter of the chapter switches to the
#   protocol the paper uses for the large models (Appendix D.1): each layer loses the dimensions flagged in that layer of
#   chapter 02's average vectors;
# - **clipped-random**, a control: as many dimensions zeroed as clipping zeroes, drawn at random (seeded) from the
#   dimensions chapter 02 never flagged. Zeroing *any* k dimensions of a vector changes its cosines a little; what clipping
#   does beyond this control is what the outliers did. Every change from raw is measured on the same pairs, with a
#   paired interval;
# - **whitened**: the thesis's whitening (§3.2.3, "all the token embedding vectors in the same layer"): each layer's mean
#   and covariance of all token vectors of a *fitting* sample of SST-2 sentences, drawn separately from the sentences
#   that are measured. A direction with no variance at all cannot be scaled to unit variance; such directions (for
#   example a dimension whose LayerNorm gain is zero) are left out, and the note after the run says how many.
#
# Anisotropy follows {doc}`chapter 01 <01_anisotropy>` (one random non-special token per sentence, disjoint pairs of
# sentences). Self-similarity uses words that occur in at least 10 SST-2 training sentences; a
# word's vector is the average of its subword vectors; the paper samples 1,000 such words.

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet"  # comma-separated model specs
n_sentences = 8000  # SST-2 training sentences for the anisotropy measurement (paper: 2,000; the paper profile uses it)
n_pairs = 4000  # disjoint sentence pairs (paper: 1,000, which left MiniLM's layer-1 clipping effect astride the scorecard's margin)
n_fit = 2000  # SST-2 training sentences the transforms are fitted on (disjoint from the above)
n_words = 1000  # words for self-similarity (paper: 1,000)
per_word = 10  # sentences per word (each word occurs in at least this many)
pca_tokens = 3000  # token vectors in the PCA views
clip = "model"  # "model": zero chapter 02's model-level outlier dims in every layer (the paper's base-model protocol); "layer": each layer's flagged dims
seed = 0
device = "auto"  # "auto" uses CUDA when present
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import lib.book.chapter as ch
from lib.core import paper
from lib.experiments import clipping_whitening

specs, results = ch.begin("06_clipping_whitening", profile, models)
samples = clipping_whitening.inputs(profile, n_sentences, n_pairs, n_fit, n_words, per_word, pca_tokens, seed)  # not chapter 02's selection sample
parameters = ch.parameters("06_clipping_whitening", globals())

# %%
settings = dict(profile=profile, clip=clip, n_pairs=n_pairs, pca_tokens=pca_tokens, seed=seed, device=device, dtype=dtype)
runs = ch.each_model(clipping_whitening.run, specs, samples=samples, results=results, parameters=parameters, **settings)

# %% tags=["hide-input"]
ch.say(clipping_whitening.transforms_note(runs, clip, n_fit))

# %% [markdown]
# ## Anisotropy and self-similarity, raw vs clipped vs whitened
#
# {numref}`fig-06-anisotropy-self-similarity` shows both measures layer by layer for the variants.

# %% tags=["hide-input"]
clipping_whitening.figure_variants(runs, results)
ch.show_each(
    clipping_whitening.variant_tables(runs), f"{{name}}: anisotropy and self-similarity by layer ({n_pairs:,} pairs; {n_words} words × {per_word} sentences)"
)
ch.show(paper.table("luo2021", "transform_claims"), "What Luo et al. (2021) and Luo's thesis report (paper; figures without printed numbers)")

# %% [markdown]
# ### Clipping against random dimensions
#
# Zeroing any dimensions changes cosines a little by itself, so what clipping does is measured against zeroing as many
# never-flagged dimensions, averaged over many random draws (one draw of a few dimensions is a noisy control; the
# caption says how many): per clipped layer, how much more clipping lowers the mean cosine of the same random pairs (a
# paired interval over the pairs), and how much more it raises self-similarity minus anisotropy (an interval over the
# words and the pairs, two separate samples). The scorecard tests the two claims of this chapter on this table.

# %% tags=["hide-input"]
ch.show_each(
    clipping_whitening.versus_random_tables(runs),
    f"{{name}}: clipping minus zeroing as many random dims (mean of {clipping_whitening.RANDOM_DRAWS} draws), per clipped layer, with 95% intervals",
    precision=3,
)

# %% [markdown]
# ## The last layer before and after whitening
#
# As in {doc}`chapter 01 <01_anisotropy>` (and the thesis's Figs. 3.13-3.14),
# {numref}`fig-06-pca-before-after-whitening` shows token vectors of the last layer projected
# on their first two principal components, coloured by position; the cross is the origin.
# After whitening the cloud is centred on the origin and, by construction, has the same
# variance in every direction of the fitting sample.

# %% tags=["hide-input"]
clipping_whitening.figure_whitening_planes(runs, seed, results)

# %% tags=["hide-input"]
ch.findings(clipping_whitening.findings(runs))

# %% tags=["hide-input"]
ch.answer(clipping_whitening.answer(runs))

# %% [markdown]
# Clipping can only lower anisotropy as far as the outliers caused it: for the paper's
# RoBERTa-base the average cosine was above 0.5 and dropped by more than 0.5, because its
# outlier dimensions carried most of it. A model that starts less anisotropic ({doc}`chapter 01 <01_anisotropy>` measures
# ours) leaves less for clipping to remove. Whitening removes the mean and equalises all directions,
# so it brings the average cosine of any model near zero: a property of the transform, not a
# finding, which is why the scorecard does not score it; the interesting question is what it
# does to the *useful* similarity structure, which the next chapters measure on word-sense and
# sentence-similarity tasks.

# %% [markdown]
# ## Exercises
#
# :::{exercise} Is whitening's cosine zero?
# :label: ex-06-read
#
# Whitening makes the covariance of the fitted vectors the identity. In how many contextual layers
# does the 95% interval of the whitened random-pair cosine contain zero, and why can it miss zero
# slightly even though the transform was fitted to remove every common direction?
# :::

# %% [markdown]
# :::{solution-start} ex-06-read
# :class: dropdown
# :::

# %% tags=["hide-input"]
ch.say(clipping_whitening.whitened_covers_zero(runs))

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} Clip more dimensions
# :label: ex-06-clip
#
# Predict what happens to the clipped cosine when the outlier threshold is halved, so that more
# dimensions are zeroed in every layer. Then run
# `python -m lib.edition.runner --chapters 02_outlier_neurons,06_clipping_whitening -p z_threshold 5` (the threshold is
# chapter 02's parameter: its outlier set is the one every chapter clips).
# :::

# %% [markdown]
# :::{solution-start} ex-06-clip
# :class: dropdown
# :::
#
# For the last model, chapter 02's average vectors can be read at threshold 5 without running anything
# again:

# %%
last = list(runs.values())[-1]
both = clipping_whitening.at_thresholds(last, (last.clipping.criterion.z_threshold, 5.0), n_pairs, seed, clip)
ch.show(both, f"{last.name}: clipping chapter 02's average vectors read at two thresholds", precision=3)

# %% [markdown]
# Zeroing more dimensions removes more of what all vectors share, which is expected to lower the
# random-pair cosine (compare the two cosine columns), but each zeroed dimension also removes
# whatever word information it held; whitening removes the common direction without discarding
# dimensions.
#
# :::{solution-end}
# :::
