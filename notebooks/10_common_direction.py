# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # A common direction, not a narrow cone
#
# :::{admonition} Before you start
# :class: tip
# **Overview.** Is the large first singular value of an embedding matrix the mark of a narrow cone, or of a
# cloud shifted away from the origin?
#
# **Read or run first.** {doc}`01_anisotropy`; for the book's own models, run
# {doc}`05_pretraining` first.
# :::
#
# {cite:t}`gao2019representation` read the fast decay of an embedding matrix's singular values as a sign that
# the embeddings occupy a *narrow cone*. {cite:t}`bis2021too` argue
# that a fast decay does not imply a cone: if every embedding is pushed in the same direction
# (their "common enemies effect" of the softmax gradient), the whole cloud is simply *shifted*
# away from the origin. Seen from the origin, a shifted ball looks like a cone and its first
# singular value dominates, but subtracting the mean puts it back around the origin.
#
# This chapter shows the argument in three steps: a toy ball that is shifted (their Fig. 2),
# each model's static input-embedding matrix projected on its top two singular vectors before
# and after centering (Fig. 1) with its singular values, and the distribution of embedding norms
# before and after centering (Figs. 5-6). Appendix A of the paper relates cosine regularisation
# (the average cosine over all pairs of embeddings) to the mean unit vector; the last section
# checks that identity numerically on the real matrices.

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet,chapter05:pe,chapter05:nope"  # comma-separated model specs (static input embeddings are read); chapter05:pe/nope are chapter 05's models
shifts = "0,1,2,4"  # toy example: distances of the sphere's centre from the origin
toy_points = 500  # toy example: points on the sphere
plane_points = 5000  # embeddings drawn for the projection plots
check_rows = 0  # rows for the Appendix A check (0: the whole matrix; the identity holds for any subset)
seed = 0
device = "auto"
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import lib.book.chapter as ch
from lib.experiments import common_direction

specs, results = ch.begin("10_common_direction", profile, models)
shift_values = common_direction.inputs(shifts, toy_points, plane_points, check_rows)
parameters = ch.parameters("10_common_direction", globals())

# %% [markdown]
# ## A shifted sphere
#
# Points drawn uniformly on the unit sphere in three dimensions, then moved along the first axis.
# The singular values are those of the point matrix as it is (not centered), which is what a
# spectrum of an embedding matrix shows ({numref}`fig-10-toy-sphere`).

# %%
sphere = common_direction.toy(shift_values, toy_points, seed)

# %% tags=["hide-input"]
results.table(sphere.table, common_direction.TOY_SPHERE, "toy", parameters=parameters)
common_direction.figure_toy(sphere, results)
ch.show(common_direction.toy_table(sphere), "Singular values of the shifted sphere: the gap grows with the shift although the shape is the same ball")

# %% [markdown]
# ## The embedding matrices, before and after centering

# %%
settings = dict(plane_points=plane_points, check_rows=check_rows, seed=seed, device=device, dtype=dtype)
runs = ch.each_model(common_direction.run, specs, results=results, parameters=parameters, **settings)

# %% [markdown]
# Each panel projects a random sample of the vocabulary on the top two singular vectors of the
# matrix as it is (raw) and after subtracting the mean (centered). The points are drawn faint, so that where they
# crowd the cloud is darker; the outlines enclose half and 90% of the reference tokens of
# {doc}`chapter 11 <11_rare_words>` (BERT's never-trained [unused] tokens; for a vocabulary without them, its last
# 1,000 ids, the rarest merges). The cross marks the origin and the arrow runs from it to the centre of the cloud
# ({numref}`fig-10-embedding-planes`); {numref}`fig-10-spectra-and-norms` gives the singular values and the lengths.

# %% tags=["hide-input"]
common_direction.figure_planes(runs, results)
common_direction.figure_spectra(runs, results)

# %% tags=["hide-input"]
ch.show(common_direction.drift_table(runs), "The mean vector and the top of the spectrum, before and after centering")

# %% [markdown]
# ## Appendix A, checked
#
# The average cosine over all ordered pairs of different embeddings (the quantity cosine
# regularisation penalises) equals
#
# $$\frac{n^2\lVert\hat\mu\rVert^2 - n}{n(n-1)},$$
#
# with $\hat\mu$ the mean of the $n$ unit
# vectors, so penalising it is penalising the length of the mean unit vector. Computed both
# ways on each matrix (on all its rows, or on a random sample of them; the brute force sums all n² cosines
# in blocks):

# %% tags=["hide-input"]
ch.show(common_direction.appendix_check(runs), "Average pairwise cosine: brute force vs the mean-unit-vector formula", precision=6)

# %% tags=["hide-input"]
ch.findings(common_direction.findings(runs))

# %% tags=["hide-input"]
ch.answer(common_direction.answer(runs))

# %% [markdown]
# ## Exercises
#
# :::{exercise} The shifted sphere in numbers
# :label: ex-10-toy
#
# Points spread evenly over a unit sphere in 3 dimensions have second moment 1/3 along every
# axis. Work out σ1/σ2 of the (uncentered) cloud shifted by s along one axis, predict it for s = 8,
# and check with `python -m lib.edition.runner --chapters 10_common_direction -p shifts 0,8`.
# :::

# %% [markdown]
# :::{solution-start} ex-10-toy
# :class: dropdown
# :::
#
# With $n$ points, $\sigma_1^2 \approx n(s^2 + 1/3)$ along the shift and $\sigma_2^2 \approx n/3$ across it, so
# $\sigma_1/\sigma_2 \approx \sqrt{3s^2 + 1}$: the gap grows linearly with the shift while the shape stays a ball.

# %% tags=["hide-input"]
ch.show(
    common_direction.ratio_vs_formula(sphere, 8.0), f"The toy sphere of this chapter ({toy_points} points): measured ratio against the formula", precision=3
)

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} Which vocabulary drifts most?
# :label: ex-10-read
#
# From the summary table, rank the models by the length of their mean embedding relative to the
# average length, and say how much centering shrinks σ1/σ2 for each. Is the model with the
# longest mean vector also the one whose ratio falls most?
# :::

# %% [markdown]
# :::{solution-start} ex-10-read
# :class: dropdown
# :::

# %% tags=["hide-input"]
ch.say("\n".join(common_direction.ranked_lines(runs)))

# %% [markdown]
# :::{solution-end}
# :::
