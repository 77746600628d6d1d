# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Supervised tasks on frozen vectors: does clipping cost anything?
#
# :::{admonition} Before you start
# :class: tip
# **Overview.** Does clipping the outlier dimensions, or whitening, cost a linear classifier on
# frozen sentence vectors any accuracy?
#
# **Read or run first.** {doc}`06_clipping_whitening` (the variants).
# :::
#
# If clipping helps similarity measures, does it remove information a classifier needs? Luo et
# al. (2021, §4.4) freeze the model, mean-pool each layer into sentence vectors, and train a
# linear classifier W ∈ ℝ^{d×N} (N classes) per layer with Adam for 10 epochs (batch 768 for
# SST-2, 128 for IMDB, 1,536 for SST-5). Clipping changed the best test accuracy by at most
# about half a point (Table 3). This chapter repeats that for raw and clipped vectors and adds
# whitened ones.
#
# Set-up here:
#
# - **SST-2** (GLUE phrases for training, the 872 development and 1,821 test sentences),
#   **IMDB** (movie reviews; the offline copy has 20,000 training and 25,000 test reviews and no
#   development split, so the development sample is drawn from the training reviews, disjoint
#   from the training sample), **SST-5** (8,544 / 1,101 / 2,210 sentences, 5 classes).
#   Training and test sets are *samples* whose sizes are parameters: a full run of IMDB through
#   MPNet would take hours on this CPU. The sample sizes are printed with the results.
# - IMDB reviews are often longer than the model's 512-token limit; they are **truncated** to it
#   (the extraction prints how many were cut).
# - Sentence vectors: the mean of all token vectors of the layer, special tokens included
#   (the pooling the paper cites, {cite:t}`reimers2019sentence`; see {doc}`chapter 08 <08_sts>`; a parameter pools the
#   sentence's own subword vectors only).
#   Clipping zeroes, in every layer, the model's outlier set detected once by {doc}`chapter 02 <02_outlier_neurons>`,
#   the same set as in chapters 06-08 (the paper's protocol; a parameter switches to each layer's own flagged dimensions).
#   **whitened** is the thesis's whitening (§3.2.3): per layer, the mean and covariance of the *token* vectors of the
#   texts in the last column of the first table (the training sample and further training texts of the task, used without their labels),
#   applied to the pooled sentence vectors. **whitened-sentences** is the sentence-level whitening of
#   {cite:t}`su2021whitening`, fitted on the pooled vectors of the same texts. Nothing is fitted on development or test
#   texts. A covariance of d dimensions estimated from n vectors has its smallest
#   eigenvalues shrunk by about (1 − √(d/n))², and whitening divides by them: with IMDB's 400
#   training reviews and MPNet's 768 dimensions sentence whitening would whiten noise, with 1,200 reviews the
#   weakest direction is amplified about 5× too much rather than without bound (the paper edition
#   fits on whole training sets; each IMDB review costs MPNet about a quarter of a second here). Token whitening has
#   hundreds of tokens per review to fit on.
# - The classifier is the paper's W (no bias), fitted **to convergence** as a logistic regression
#   (L-BFGS, scikit-learn) for L2 strengths C = 10⁻³, 10⁻², … up to 10³, the development sample
#   choosing one; the path stops once two strengths in a row fail to beat the best (the weakly
#   regularised fits are the slow ones). The paper
#   trains with Adam for 10 epochs; a fixed number of steps stops short of the optimum by
#   different amounts for raw and whitened vectors (whose scales differ by orders of magnitude),
#   so differences between variants would partly measure convergence. The paper reports the best
#   *test* accuracy over layers; we report it too, and beside it the test accuracy of the layer
#   with the best development accuracy.

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet"  # comma-separated model specs
tasks = "sst2,imdb,sst5"  # comma-separated classification tasks
n_train = {"sst2": 4000, "imdb": 400, "sst5": 2000}  # training samples per task
n_dev = {"sst2": 872, "imdb": 100, "sst5": 1101}  # development samples per task (the L2 strength is chosen on them)
n_test = {
    "sst2": 1821,
    "imdb": 1500,
    "sst5": 2210,
}  # test samples per task (accuracy reported on them; IMDB's more, for a paired interval narrow enough to test ±1 point)
n_fit = {"sst2": 4000, "imdb": 1200, "sst5": 2000}  # texts the whitening is fitted on: the training sample, then unlabelled training texts
bias = False  # the paper's classifier is W alone
variants = "raw,clipped,whitened,whitened-sentences"  # transforms compared (raw is always included); see the list above
clip = "model"  # "model": zero chapter 02's model-level outlier dims in every layer (the paper's base-model protocol); "layer": each layer's flagged dims
pool_special = True  # mean pooling includes [CLS]/[SEP] (the sentence-transformers' pooling, which the paper cites); false: the sentence's subwords only
seed = 0
device = "auto"  # "auto" uses CUDA when present
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import lib.book.chapter as ch
from lib.experiments import supervised, vector_variants

specs, results = ch.begin("09_supervised", profile, models)
wanted = vector_variants.requested(variants)
data = supervised.task_data(globals())  # the samples by task, each size checked
parameters = ch.parameters("09_supervised", globals())

# %% tags=["hide-input"]
ch.show(supervised.samples_table(data), "Examples used per task (samples; see the parameters)")

# %%
# sentence vectors a parallel build extracted ahead of the chapter are read from its cache
settings = dict(profile=profile, wanted=wanted, bias=bias, pool_special=pool_special, clip=clip, device=device, dtype=dtype)
runs = ch.each_model(supervised.run, specs, data=data, results=results, parameters=parameters, **settings)

# %% tags=["hide-input"]
ch.say(vector_variants.clipping_note([r.clipping for r in runs.values()]))

# %% [markdown]
# ## Best accuracy per task
#
# The best test accuracy is the paper's number (the best test accuracy over layers); the test accuracy at the best
# development layer chooses the layer on the development sample instead, as a score should.

# %% tags=["hide-input"]
ch.show(supervised.summary_table(runs), "Ours: test accuracy (%) on the samples above", precision=1)
ch.say(supervised.convergence_note(runs))
ch.show_beside_paper(
    supervised.summary_of(runs),
    supervised.paper_table(),
    ["task", "variant"],
    columns=["model", "task", "variant", "best_test", "best_test_layer", "paper_accuracy_percent", "paper_layer"],
    caption="Ours beside the paper's value for the same model",
    paper_columns=["model", "task", "variant", "paper_accuracy_percent", "paper_layer", "paper_source"],
    paper_caption="Luo et al. (2021) Table 3 (paper): BERT-base and RoBERTa-base, full training sets",
)

# %% [markdown]
# ## The effect by layer
#
# For every layer, the raw vectors' test accuracy beside always answering the most frequent class, and how far each
# variant moves it, paired over the same test examples.

# %% tags=["hide-input"]
supervised.figures_by_layer(runs, data, results)

# %% tags=["hide-input"]
ch.findings(supervised.findings(runs))

# %% tags=["hide-input"]
ch.answer(supervised.answer(runs))

# %% [markdown]
# A linear classifier can give any dimension as much or as little weight as it needs, so
# zeroing two or three of several hundred dimensions should cost little unless those
# dimensions carry the label; the paper's finding is that they do not. With samples of a few
# hundred or thousand examples, differences of a point or two are within the noise: the
# intervals in the figures above show how wide it is for each task.

# %% [markdown]
# ## Exercises
#
# :::{exercise} Does clipping cost accuracy?
# :label: ex-09-read
#
# Luo et al. find that clipping the outlier dimensions changes supervised accuracy by at most
# about half a point. Choosing each variant's layer on the development set, by how much does the
# test accuracy of the clipped and the whitened vectors differ from the raw vectors' here?
# :::

# %% [markdown]
# :::{solution-start} ex-09-read
# :class: dropdown
# :::

# %% tags=["hide-input"]
ch.show(
    supervised.dev_choice_gaps(runs, wanted),
    "Test accuracy of the layer chosen on the development sample, against the raw vectors (points, this run)",
    precision=2,
)

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} How much regularisation did each variant need?
# :label: ex-09-regularisation
#
# Every classifier is fitted to convergence for seven L2 strengths and the development accuracy
# picks one (C is the inverse strength: small C, strong regularisation). Whitening gives
# every direction unit variance, including the many weak directions that raw vectors barely use.
# Before looking, predict whether whitened vectors are chosen with smaller or larger C than raw
# ones, and why that would matter most for IMDB, which has the fewest training texts.
# :::

# %% [markdown]
# :::{solution-start} ex-09-regularisation
# :class: dropdown
# :::

# %% tags=["hide-input"]
ch.show(supervised.chosen_strengths(runs), "The inverse L2 strength C chosen on the development sample, over layers", precision=3)

# %% [markdown]
# Whitened vectors amplify the weak directions to the same scale as the strong ones, and in those
# directions a few hundred training texts mostly hold noise, so the development sample tends to
# choose a smaller C (stronger regularisation) for them than for raw vectors; the fewer training
# texts per dimension (IMDB), the stronger the pull. A classifier trained without this choice,
# for a fixed number of optimiser steps as in the paper, regularises implicitly by stopping
# early, and then differences between variants partly measure how far the optimiser got.
#
# :::{solution-end}
# :::
