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
# **Overview.** Shows with a toy sphere and the models' input-embedding matrices that a shifted
# cloud, not a narrow cone, explains the large first singular value.
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
#
# The measurements of this chapter are `lib/experiments/common_direction.py`.

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet,chapter05:pe,chapter05:nope"  # comma-separated model specs (static input embeddings are read); chapter05:pe/nope are chapter 05's models
shifts = "0,1,2,4"  # toy example: distances of the sphere's centre from the origin
toy_points = 500  # toy example: points on the sphere
plane_points = 5000  # embeddings drawn for the projection plots
check_rows = 0  # rows for the Appendix A check (0 = the whole matrix; the identity holds for any subset)
seed = 0
device = "auto"
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import numpy as np
import pandas as pd

import lib.book.chapter as ch
from lib.encode.models import load_model
from lib.errors import require
from lib.experiments import common_direction, figure_kinds

specs, results = ch.begin("10_common_direction", profile, models)
shift_texts = ch.names(shifts, "shifts")
require(all(s.replace(".", "", 1).isdigit() for s in shift_texts), f"shifts must be comma-separated non-negative numbers, got {shifts!r}")
shift_values = [float(s) for s in shift_texts]
ch.positive_int("toy_points", toy_points)
ch.positive_int("plane_points", plane_points)
require(isinstance(check_rows, int) and check_rows >= 0, f"check_rows must be 0 (all) or a positive integer, got {check_rows!r}")
parameters = ch.parameters("10_common_direction", globals())

# %% [markdown]
# ## A shifted sphere
#
# Points drawn uniformly on the unit sphere in three dimensions, then moved along the first axis.
# The singular values are those of the point matrix as it is (not centered), which is what a
# spectrum of an embedding matrix shows ({numref}`fig-10-toy-sphere`).

# %%
rng = np.random.default_rng(seed)
ball = rng.normal(size=(toy_points, 3))
ball /= np.linalg.norm(ball, axis=1, keepdims=True)
clouds = {s: ball + np.array([s, 0.0, 0.0]) for s in shift_values}
toy_spectra = {s: np.linalg.svd(c, compute_uv=False) for s, c in clouds.items()}
toy = pd.DataFrame([{"shift": s, **{f"sigma_{i + 1}": v for i, v in enumerate(sv)}, "sigma_1_over_sigma_2": sv[0] / sv[1]} for s, sv in toy_spectra.items()])
results.table(toy, "toy_sphere", "toy", parameters=parameters)
results.figure(
    common_direction.toy_sphere(clouds, toy_spectra),
    "toy_sphere",
    "A ball of points shifted away from the origin: the shape is unchanged, the singular values are not.",
)
ch.show(toy, "Singular values of the shifted sphere: the gap grows with the shift although the shape is the same ball")

# %% [markdown]
# ## The embedding matrices, before and after centering

# %%
views, spectra, norms, summary, rings, colour = {}, {}, {}, [], {}, {}
for spec in specs:
    lm = load_model(spec, device=device, dtype=dtype)
    found = common_direction.measure(lm, plane_points, check_rows, seed=seed)
    for label, view in found.views.items():
        key = f"{lm.name}, {label}"
        views[key], rings[key], colour[key] = view, found.reference, found.sample_norms
    spectra[lm.name], norms[lm.name] = found.spectra, found.norms
    results.table(
        common_direction.EMBEDDING_MATRIX.frame([found.summary]),
        common_direction.EMBEDDING_MATRIX,
        spec,
        parameters=parameters,
        model_info={"name": lm.name, "family": lm.family, "width": found.summary["width"]},
    )
    summary.append(found.summary)
    del lm
summary = pd.DataFrame(summary)

# %% [markdown]
# Each panel projects a random sample of the vocabulary on the top two singular vectors of the
# matrix as it is (raw) and after subtracting the mean (centered), coloured by the embedding's length;
# the reference tokens of {doc}`chapter 11 <11_rare_words>` are ringed (BERT's never-trained `[unused]` tokens; for a
# vocabulary without them, its last 1,000 ids, the rarest merges). The cross marks the origin
# ({numref}`fig-10-embedding-planes`); {numref}`fig-10-spectra-and-norms` gives the singular values and the norms.

# %%
fig = figure_kinds.plane_views(views, colour, "L2 norm of the (raw) embedding", special=rings, ring_label="reference tokens (chapter 11)")
results.figure(
    fig,
    "embedding_planes",
    "Input embeddings on their first two principal components, coloured by norm; the reference tokens of chapter 11 ringed.",
)
fig = common_direction.spectra_and_norms(spectra, norms)
results.figure(fig, "spectra_and_norms", "Singular values of the raw and centered embedding matrices, and the distribution of embedding norms.")

# %%
ch.show(
    summary[["model", "vocabulary", "width", "average_norm_raw", "mean_vector_norm_raw", "ratio_raw", "sigma1_over_sigma2_raw", "sigma1_over_sigma2_centered"]],
    "The mean vector and the top of the spectrum, before and after centering",
)

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
# ways on each matrix (all rows, or `check_rows` of them; the brute force sums all n² cosines
# in blocks):

# %%
check = summary[["model", "check_rows", "mean_pairwise_cosine_brute_force", "mean_pairwise_cosine_from_mean_unit_vector"]].assign(
    absolute_difference=lambda t: (t["mean_pairwise_cosine_brute_force"] - t["mean_pairwise_cosine_from_mean_unit_vector"]).abs()
)
ch.show(check, "Average pairwise cosine: brute force vs the mean-unit-vector formula", precision=6)

# %% tags=["hide-input"]
ch.say(
    "**What our run shows.**\n\n"
    + "\n".join(
        f"- **{r.model}**: the mean embedding is {r.ratio_raw:.2f} times the average embedding length; σ1/σ2 is "
        f"{r.sigma1_over_sigma2_raw:.2f} before and {r.sigma1_over_sigma2_centered:.2f} after centering; the average pairwise cosine is "
        f"{r.mean_pairwise_cosine_brute_force:.4f} (formula {r.mean_pairwise_cosine_from_mean_unit_vector:.4f})."
        for r in summary.itertuples()
    )
)

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

# %%
rows = []
for s in sorted(set(shift_values) | {8.0}):
    sv = np.linalg.svd(ball + np.array([s, 0.0, 0.0]), compute_uv=False)
    rows.append({"shift": s, "σ1/σ2 measured": sv[0] / sv[1], "√(3s² + 1)": np.sqrt(3 * s * s + 1)})
ch.show(pd.DataFrame(rows), f"The toy sphere of this chapter ({toy_points} points): measured ratio against the formula", precision=3)

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

# %%
ranked = summary.sort_values("ratio_raw", ascending=False)
ch.say(
    "\n".join(
        f"- **{r.model}**: |mean| / mean |x| = {r.ratio_raw:.2f}; σ1/σ2 {r.sigma1_over_sigma2_raw:.2f} raw → {r.sigma1_over_sigma2_centered:.2f} centered "
        f"({r.sigma1_over_sigma2_raw / r.sigma1_over_sigma2_centered:.2f}× smaller)."
        for r in ranked.itertuples()
    )
)

# %% [markdown]
# :::{solution-end}
# :::
