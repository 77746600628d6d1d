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
# **Overview.** Traces the outlier dimensions back to the position embeddings and the LayerNorm
# parameters, and follows them through the first layers.
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
import numpy as np
import pandas as pd

import lib.book.chapter as ch
from lib.core import paper
from lib.encode.collectors import LayerStats, PositionProfile
from lib.encode.extraction import extract
from lib.encode.models import load_model
from lib.experiments import figure_kinds, outlier_set, positional_origin
from lib.measure import outliers, positional

ch.positive_int("max_positions", max_positions)
specs, results = ch.begin("03_positional_origin", profile, models)
sentences = ch.sst2_sentences(n_sentences, seed)
parameters = ch.parameters("03_positional_origin", globals())

# %%
found = {}
for spec in specs:
    lm = load_model(spec, device=device, dtype=dtype)
    stats = LayerStats(covariance=False)
    layers = tuple(range(lm.n_layers + 1))  # the embedding output and every layer: the paper's "every layer" is tested in all
    with PositionProfile(lm, layers=layers, max_positions=max_positions) as profile_collector:
        extract(lm, sentences, [stats, profile_collector], desc=lm.name)
    reference = outlier_set.outliers_of(lm, spec, profile)
    print(f"outlier set of {reference.describe()}")
    z_threshold, detected, dims, signs = reference.criterion.z_threshold, reference.detected, reference.dims, reference.signs
    view = positional.position_view(lm, z_threshold)
    norms = positional.layernorms(lm)
    ranks = positional.parameter_ranks(norms, dims, signs)
    criteria = positional_origin.layernorm_criteria(norms, dims, signs)
    means = profile_collector.means()
    spread = positional.propagation(means, profile_collector.stages, dims, counts=profile_collector.counts, z_threshold=z_threshold)
    info = {
        "name": lm.name,
        "family": lm.family,
        "n_layers": lm.n_layers,
        "width": lm.width,
        "n_tokens": stats.count,
        "position_offset": view.tables.position_offset,
    }
    for name, frame in [
        (positional_origin.EMBEDDING_TABLES, view.summary),
        (positional_origin.POSITION_ROWS, view.rows),
        (positional_origin.LAYERNORM_RANKS, ranks),
        (positional_origin.LAYERNORM_CRITERIA, criteria),
        (positional_origin.PROPAGATION, spread),
    ]:
        results.table(frame, name, spec, parameters=parameters, model_info=info)
    found[lm.name] = dict(
        spec=spec,
        dims=dims,
        signs=signs,
        detected=detected,
        view=view,
        summary=view.summary,
        rows=view.rows,
        ranks=ranks,
        criteria=criteria,
        spread=spread,
        z=np.stack([outliers.robust_z(m) for m in means]),
        stages=profile_collector.stages,
        info=info,
    )
    del lm

# %%
ch.show(
    pd.concat(
        [
            pd.DataFrame(
                {
                    "model": [name],
                    "outlier dims (sign)": [", ".join(f"{d} ({s})" for d, s in zip(f["dims"], f["signs"])) or "none"],
                    "tokens": [f["info"]["n_tokens"]],
                    "position offset": [f["info"]["position_offset"]],
                }
            )
            for name, f in found.items()
        ],
        ignore_index=True,
    ),
    "The models' outlier dimensions (chapter 02's set, the same in every chapter), and the position-table row read by sequence position 0",
)

# %% [markdown]
# ## Position embeddings
#
# Each panel is one row of the position-embedding table, value by dimension; labelled points are
# dimensions at least `z_threshold` robust standard deviations from that row's median. Shown:
# the first three sequence positions, the position whose row is most extreme, and position 50.

# %%
for name, f in found.items():
    chosen = f["view"].example_rows()
    matrix = f["view"].matrix(chosen)
    flags = np.abs(outliers.robust_z(matrix)) >= z_threshold
    titles = [f"position {p} (row {p + f['info']['position_offset']})" for p in chosen]
    fig = figure_kinds.vector_panels(matrix, flags, titles, ylabel="value")
    results.figure(fig, f"position_embeddings_{name}", f"{name}: learned position embeddings of a few positions; flagged dimensions marked.", tab=name)

# %% [markdown]
# The next table asks the same of every embedding table: in what share of rows does any
# dimension stand out, and is one dimension the maximum (minimum) of most rows? "position"
# counts the rows that sequences of up to the model's maximum length use; "position after the
# first" leaves out the `[CLS]`/`<s>` position, as the paper's "from the 4th position on" does
# for RoBERTa.

# %%
for name, f in found.items():
    ch.show(
        positional_origin.embedding_tables_view(f["summary"]),
        f"{name}: embedding tables — most frequent maximum/minimum dimension, rows with a flagged dimension",
        tab=name,
    )
ours = pd.concat([f["summary"].assign(model=name, spec=f["spec"]) for name, f in found.items()], ignore_index=True)
paper_argmax = paper.table("luo2021", "position_argmax").rename(columns={"paper_table": "table"})
compare = paper.beside(ours[ours["table"] == positional.AFTER_FIRST], paper_argmax[["model", "table", "paper_dim", "paper_percent"]], on=["table"])
ch.show(
    compare[["model", "table", "argmax_dim", "argmax_percent", "paper_dim", "paper_percent"]],
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

# %%
with_dims = {name: f["ranks"] for name, f in found.items() if len(f["dims"])}
if with_dims:
    results.figure(
        figure_kinds.layernorm_ranks(with_dims),
        "layernorm_ranks",
        "Rank of each outlier dimension among the LayerNorm gains and biases of every layer (1 = largest).",
    )
for name, f in found.items():
    if not len(f["dims"]):
        ch.say(f"**{name}**: no model-level outlier dimension was detected, so there is nothing to rank.")
        continue
    wide = f["ranks"].pivot_table(index=["layer", "layernorm"], columns=["param", "dim"], values="rank", sort=False)
    wide.columns = [f"{'γ' if p == 'gamma' else 'β'} rank, dim {d}" for p, d in wide.columns]
    ch.show(wide.reset_index(), f"{name}: rank of each outlier dimension among {f['info']['width']} LayerNorm parameters (1 = top)", precision=0, tab=name)
ch.show(paper.table("luo2021", "layernorm_claims"), "Luo et al. (2021), §3 (paper): LayerNorm parameters of BERT-base and RoBERTa-base")

# %% [markdown]
# The paper's two bars are about **each layer's first LayerNorm** (after attention): γ among the
# six largest for the first ten of twelve layers (BERT-base), or β among the two
# most extreme in all layers (RoBERTa-base). The table counts, for each outlier dimension, in how
# many of those layers it clears each bar (the first 10/12 of a model's depth for γ), and, as the
# control, how many of the dimensions that were never flagged clear one of the bars in every layer:
# a bar that many ordinary dimensions clear says little about the outliers.

# %%
for name, f in found.items():
    c = f["criteria"]
    if c.empty or not c["flagged"].any():
        continue
    shown = c[c["flagged"]].drop(columns="flagged")
    ch.show(
        shown,
        f"{name}: outlier dimensions against the paper's bars in each layer's first LayerNorm; "
        f"{int(c.loc[~c['flagged'], 'meets'].sum())} of {int((~c['flagged']).sum())} never-flagged dimensions clear one in every layer",
        tab=name,
    )

# %% [markdown]
# ## From some positions to every position
#
# The paper's argument in one figure per model: for each outlier dimension, how far it stands
# out (robust z) in the average vector of each sequence position, at the LayerNorm's input
# (token + position (+ segment) embeddings), after the embedding LayerNorm (layer 0), and after
# layers 1 and 2. The grey band is where a dimension is *not* flagged. The table below it follows each dimension
# through every layer: the paper says the outlier "is subsequently observed in every layer and token after the first LN
# is applied", and the scorecard asks that of every layer.

# %%
for name, f in found.items():
    if len(f["dims"]):
        shown = positional_origin.FIGURE_STAGES  # the LayerNorm's input, its output and the first layers; the table has every layer
        fig = positional_origin.propagation(f["z"][:shown], f["stages"][:shown], list(f["dims"]), threshold=z_threshold)
        caption = f"{name}: robust z of the outlier dimensions by position and stage (embeddings, LayerNorm, layers)."
        results.figure(fig, f"propagation_{name}", caption, tab=name)
        ch.show(
            positional_origin.propagation_view(f["spread"]),
            f"{name}: % of positions at which each outlier dimension is flagged (|robust z| ≥ {z_threshold:g}), by stage",
            precision=1,
            tab=name,
        )


# %% tags=["hide-input"]
def top_layernorm(ranks: pd.DataFrame, top: int = 5) -> str:
    """The LayerNorm parameter in which a dimension ranks in the top `top` in most layers."""
    best = ranks[ranks["layer"] > 0].assign(top=lambda r: r["rank"] <= top).groupby(["layernorm", "param"])["top"].sum().sort_values(ascending=False)
    (which, param), count = best.index[0], int(best.iloc[0])
    if count == 0:
        return f"in no layer among the top {top} of any LayerNorm's γ or β"
    layers = ranks.query("layernorm == @which and param == @param and layer > 0 and rank <= @top")["layer"].to_numpy()
    symbol = "γ" if param == "gamma" else "β"
    return f"in the top {top} of the {which} LayerNorm's {symbol} in {count} of {ranks['layer'].max()} layers ({outliers.layer_ranges(layers)})"


def dim_sentence(f: dict, d: int) -> str:
    """Where dimension d ranks among the LayerNorm parameters, and its median z over positions at each stage."""
    z = f["spread"][f["spread"]["dim"] == d].set_index("stage")["median_z"]
    z = z.iloc[[*range(min(3, len(z) - 1)), len(z) - 1]]  # the LayerNorm's input and output, layer 1 and the last layer
    text = f" Dim {d} is {top_layernorm(f['ranks'][f['ranks']['dim'] == d])}; its median z over positions is " + ", ".join(
        f"{v:+.1f} ({stage})" for stage, v in z.items()
    )
    last = f["ranks"].query("param == 'gamma' and dim == @d").iloc[-1]
    if abs(last["value"]) < 1e-3:
        text += f". The last LayerNorm's γ[{d}] is {last['value']:.1e}: the model switches this dimension off in its output"
    return text + "."


lines = []
for name, f in found.items():
    summary = f["summary"].set_index("table")
    after = summary.loc[positional.AFTER_FIRST]
    first = f["rows"].iloc[0]
    text = (
        f"- **{name}**: the position-0 embedding has {first['n_flagged']} flagged dimension(s)"
        f"{' (' + first['flagged_dims'] + ')' if first['n_flagged'] else ''}; "
        f"{after['rows_with_flagged_dim_percent']:.1f}% of the later positions have one, and dimension {int(after['argmax_dim'])} is the maximum of "
        f"{after['argmax_percent']:.1f}% of them (token table: {summary.loc['token', 'rows_with_flagged_dim_percent']:.1f}% of rows flagged)."
    )
    text += "".join(dim_sentence(f, d) for d in f["dims"])
    if not len(f["dims"]):
        text += " No model-level outlier dimension was detected."
    lines.append(text)
ch.say("**What our run shows.**\n\n" + "\n".join(lines))

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

# %%
ch.say(
    "\n".join(f"- **{name}**: position 0 reads row {f['info']['position_offset']} of the table." for name, f in found.items())
    + "\n\nRoBERTa-style models (MPNet among them) count positions from the padding index + 1, so rows 0 and 1 are never "
    "used by real tokens; BERT-style models start at row 0. A list of model types would be wrong for the next architecture; "
    "a forward hook on the position-embedding module sees the ids the model actually uses."
)

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

# %%
lines = []
for name, f in found.items():
    level = f["detected"][f["detected"]["model_outlier"]]
    if level.empty:
        lines.append(f"- **{name}**: no model-level outlier in this run, so there is nothing to lose.")
        continue
    lines.append(
        f"- **{name}**: "
        + "; ".join(f"dim {r.dim} peaks at |z| = {r.max_abs_z:.1f} ({r.max_abs_z / z_threshold:.1f}× the threshold)" for r in level.itertuples())
        + "."
    )
ch.say(
    "\n".join(lines) + "\n\nA mean over a quarter of the tokens has twice the standard error, so a dimension far above the "
    "threshold stays flagged; one near it may drop out in some layers and, if that takes it below half of the contextual layers, "
    "lose its model-level status."
)

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

# %%
ch.say(
    "\n".join(f"- **{name}**, dim {d}: {top_layernorm(f['ranks'][f['ranks']['dim'] == d])}." for name, f in found.items() for d in f["dims"])
    or "No model-level outlier dimension was detected in this run."
)

# %% [markdown]
# :::{solution-end}
# :::
