"""Chapter 05's experiment over seeds: pairs of masked-LM pre-training runs with and without position embeddings (Luo
et al. 2021, §3), each pair sharing a seed, and per run the numbers the verdicts rest on: the final validation
perplexity, the paper's extreme-dimension share and chapter 02's model-level outliers."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from transformers import PreTrainedTokenizerFast

from ..core import paper, store
from ..core.checks import positive_int
from ..core.declaration import chapter
from ..core.profiles import chapter_parameters, config
from ..core.sources import comma_list
from ..core.store import Writer
from ..encode.collectors import LayerStats
from ..encode.models import load_model
from ..errors import BookError, require
from ..measure import inference, metrics, outliers, positional
from ..measure.outliers import OutlierReport
from ..measure.positional import AFTER_FIRST
from ..provenance import record
from ..settings import DTYPES, autocast_precision, cache_dir, models_dir, pick_device
from ..train import masked_lm
from . import outlier_set, plotting
from .figure_kinds import average_vectors, average_vectors_alt, layernorm_ranks, marked_vectors
from .outlier_set import OUTLIER_COLUMNS, Criterion
from .plotting import COLORS
from .positional_origin import embedding_tables_view, layernorm_ranks_alt, rows_alt
from .verdicts import UNTESTABLE, Claim, Outcome, Tables, decide, outcome

CHAPTER = chapter(
    "05_pretraining",
    reads=(outlier_set.CHAPTER,),
    allowed={"names": "two folder names under $BOOK_MODELS_DIR: with, then without position embeddings", "train_dtype": ", ".join(DTYPES)},
)


def seed_pairs(names: list[str], seed: int, seeds: int) -> dict[int, tuple[str, str]]:
    """Per seed, the folder names of its (with, without position embeddings) models: the first seed keeps `names`
    (the models other chapters read), later ones add "-seed<k>"."""
    return {s: tuple(n if s == seed else f"{n}-seed{s}" for n in names) for s in range(seed, seed + seeds)}


def pretraining_runs(parameters: Mapping[str, object]) -> tuple[dict[int, tuple[str, str]], dict[str, masked_lm.PretrainConfig]]:
    """Chapter 05's runs from its parameters (the cell's namespace, or `chapter_parameters`): per seed the pair of model
    names (with, without position embeddings) and each run's configuration. The chapter and `lib.edition.train_ahead`
    (the same runs under torchrun, ahead of the chapter) both call this."""
    names = comma_list(parameters["names"])
    require(
        len(names) == 2 and names[0] != names[1], f"names must be two different model names, with then without position embeddings, got {parameters['names']!r}"
    )
    precision = autocast_precision(str(parameters["train_dtype"]), pick_device(str(parameters["device"])))
    base = config(masked_lm.PretrainConfig, parameters, position_embeddings=True, adam_betas=tuple(parameters["adam_betas"]), precision=precision)
    pairs = seed_pairs(names, int(parameters["seed"]), int(parameters["seeds"]))
    configs = {name: replace(base, seed=s, position_embeddings=name == pe) for s, (pe, nope) in pairs.items() for name in (pe, nope)}
    return pairs, configs


def train_unless_saved(
    configs: Mapping[str, masked_lm.PretrainConfig],
    corpus: tuple,
    track_blocks: int,
    device: str,
    edition: str,
    retrain: bool = False,
    micro_batch: int | None = None,
    processes: int = 1,
    main: bool = True,
    barrier: Callable[[], None] = lambda: None,
) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Each run's (training history, outlier track): the saved run's where one was saved in `models_dir()` with the same
    settings and training code (unless `retrain`), else trained now on `corpus` (tokenizer, training and validation
    blocks) and saved by the main process as the `edition`'s, once every run to train is checked to replace no other
    edition's model (`check_free`). Chapter 05 calls this, and so does `python -m lib.edition.train_ahead` (under
    torchrun, with the processes' barrier), so the runs it saves are the ones the chapter reuses."""
    saved = {name: None if retrain else masked_lm.saved_run(models_dir() / name, cfg) for name, cfg in configs.items()}
    for name, cfg in configs.items():
        if saved[name] is None:
            check_free(name, cfg, edition)
    reused, trained = [], []
    for name, cfg in configs.items():
        if saved[name] is None:
            what = "with" if cfg.position_embeddings else "without"
            many = f", {processes} processes" if processes > 1 else ""
            checkpoints = cache_dir() / "pretrain"
            if main and (checkpoints / cfg.key() / "checkpoint.pt").exists():  # resumed: this run's time is not its cost
                record("reused", checkpoints / cfg.key(), f"{name}: pre-training checkpoint")
            run = masked_lm.train(
                cfg,
                *corpus,
                track_blocks=track_blocks,
                device=device,
                checkpoint_dir=checkpoints,
                desc=f"{name} ({what} position embeddings{many})",
                micro_batch=micro_batch,
            )
            if main:
                masked_lm.save(run, models_dir() / name, edition)
                trained.append(name)
            barrier()
            saved[name] = (run.history, run.track)
            del run
        elif main:
            reused.append(name)
            record("reused", models_dir() / name, f"{name}: saved pre-training run")
    for names, done in ((trained, "saved in"), (reused, "saved with these settings, reused (retrain=True trains them again):")):
        if names:
            print(f"{', '.join(names)}: {done} {models_dir()}")
    return saved


def check_free(name: str, cfg: masked_lm.PretrainConfig, edition: str) -> None:
    """Stop with one line before training a run of the `edition` whose folder (`models_dir()/name`) holds a model that
    other chapters may read by that name: one that chapter 05 did not save, or a run saved with other settings by
    another edition (or before runs recorded their edition). A run with the same settings is the same model, which
    editions share (saved by other training code, it is trained again in place); an edition's own run is replaced when
    its settings change."""
    folder = models_dir() / name
    if not folder.exists():
        return
    saved = masked_lm.saved_record(folder)
    remedy = (
        f"give the {edition} edition's chapter 05 names of its own (in its profile, under 05_pretraining: "
        f'names: "{edition}-roberta-pe,{edition}-roberta-nope"), or delete {folder} if no edition needs it'
    )
    unsaved = f"{folder} holds a model that chapter 05 did not save (no readable training.json), which training {name} would replace"
    require(saved is not None, f"{unsaved}; {remedy}")
    ours = masked_lm.as_recorded(cfg)
    theirs = saved.get("config") or {}
    if saved.get("edition") == edition or theirs == ours:
        return
    field = next((k for k in (*ours, *theirs) if theirs.get(k) != ours.get(k)), "config")
    owner = f"the {saved['edition']} edition" if "edition" in saved else "an edition that did not record its name"
    raise BookError(
        f"{folder} holds a model pre-trained by {owner} with other settings ({field} {theirs.get(field)!r} there, {ours.get(field)!r} in the "
        f"{edition} edition), which that edition's chapters read by name: training {name} would replace it; {remedy}"
    )


def perplexity_gap(
    folder: Path,
    pair: tuple[str, str],
    configs: dict[str, masked_lm.PretrainConfig],
    tokenizer: PreTrainedTokenizerFast,
    blocks: masked_lm.shards.Blocks,
    device: str,
) -> dict:
    """One seed's pair (with, without position embeddings; folder names under `folder`) scored on the same masked
    validation tokens: both perplexities and their ratio (without / with) with a 95% paired bootstrap interval over
    blocks."""
    with_pe, without_pe = (configs[name] for name in pair)
    require(
        (with_pe.seed, with_pe.mask_prob) == (without_pe.seed, without_pe.mask_prob),
        f"{pair[0]} and {pair[1]} would be scored with different maskings; a pair must share seed and mask_prob",
    )
    (sums_pe, counts), (sums_nope, _) = (masked_lm.saved_block_losses(folder / name, configs[name], tokenizer, blocks, device) for name in pair)
    ratio, low, high = metrics.perplexity_ratio(sums_pe, sums_nope, counts, seed=with_pe.seed)
    return {
        "seed": with_pe.seed,
        "validation_blocks": len(counts),
        "masked_tokens": int(counts.sum()),
        "perplexity_with_pe": float(np.exp(sums_pe.sum() / counts.sum())),
        "perplexity_without_pe": float(np.exp(sums_nope.sum() / counts.sum())),
        "ratio_without_over_with": ratio,
        "ratio_low_95": low,
        "ratio_high_95": high,
    }


def run_summary(name: str, cfg: masked_lm.PretrainConfig, history: pd.DataFrame, size: dict, report: OutlierReport, unigram: float) -> dict:
    """One run's row of the chapter's summary (PRETRAIN_SUMMARY): its size, training, final perplexity and, on the
    outlier analysis's sentences, the most frequent extreme dimension's share and the number of model-level outliers."""
    top = report.pooled.loc[report.pooled["percent"].idxmax()]
    return {
        "model": name,
        "seed": cfg.seed,
        "position_embeddings": cfg.position_embeddings,
        **size,
        "steps": int(history["step"].iloc[-1]),
        "tokens_seen_millions": history["tokens_seen"].iloc[-1] / 1e6,
        "training_minutes": history["seconds"].sum() / 60,
        "training_precision": "bf16 autocast" if cfg.precision == "bfloat16" else "float32",
        "valid_perplexity": history["valid_perplexity"].iloc[-1],
        "unigram_perplexity": unigram,
        "top_extreme_kind": top["kind"],
        "top_extreme_dim": int(top["dim"]),
        "top_extreme_percent": float(top["percent"]),
        "model_outliers": int(report.model_outliers.shape[0]),
    }


def training_curves(histories: dict[str, pd.DataFrame], reference: tuple[str, float] | None = None):
    """Masked-LM training loss and validation perplexity (log scale) by step, one line per run; optionally a
    labelled reference perplexity as a dashed line."""
    fig, (left, right) = plotting.grid(2, columns=2, panel_height=3.4)
    for (name, h), color in zip(histories.items(), COLORS):
        left.plot(h["step"], h["train_loss"], marker="o", ms=3, color=color, label=name)
        right.plot(h["step"], h["valid_perplexity"], marker="o", ms=3, color=color, label=name)
    if reference is not None:
        right.axhline(reference[1], color="grey", ls="--", lw=1, label=f"{reference[0]}: {reference[1]:.0f}")
    left.set(xlabel="step", ylabel="training loss (mean since last evaluation)", title="Training loss")
    right.set(xlabel="step", ylabel="validation perplexity", yscale="log", title="Validation perplexity (log scale)")
    low, high = right.get_ylim()
    subs = (1.0, 2.0, 5.0) if high / low > 10 else (1.0, 2.0, 3.0, 5.0, 7.0)  # a few labelled ticks, even within one decade
    right.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=subs))
    right.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    right.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    plotting.legend_above(fig, right)
    return fig


EXTREME = {"argmin": "minimum", "argmax": "maximum"}  # a result table's kind of extreme, in words (as chapter 02's)
DARKEST_SHARE = 0.55  # the part of viridis whose colours keep at least 3:1 contrast against white (its yellow end does not)


def outlier_track(tracks: dict[str, pd.DataFrame], threshold: float, histories: dict[str, pd.DataFrame] | None = None):
    """Per run (rows) and layer (lines, dark to light viridis) across checkpoints: robust z of the largest-|mean|
    dimension (dashed: the outlier threshold; black: the position table's mean row, from a history's `pe_top_z`, where
    it has one), and the share of vectors whose maximum lies in the most frequent argmax dimension; one legend above."""
    fig, axes = plt.subplots(len(tracks), 2, figsize=(11, 3.8 * len(tracks)), squeeze=False, sharex=True, layout="constrained")
    cmap = plt.get_cmap("viridis")
    for (left, right), (name, t) in zip(axes, tracks.items()):
        layers = sorted(t["layer"].unique())
        for layer in layers:
            rows = t[t["layer"] == layer]
            color = cmap(DARKEST_SHARE * layer / max(1, len(layers) - 1))
            left.plot(rows["step"], rows["top_z"].abs(), marker="o", ms=3, color=color, label=f"layer {layer}")
            right.plot(rows["step"], rows["argmax_percent"], marker="o", ms=3, color=color)
        left.axhline(threshold, color="grey", ls="--", lw=1, label=f"outlier threshold ({threshold:g})")
        top = float(t["top_z"].abs().max())
        table = None if histories is None or "pe_top_z" not in histories[name] else histories[name].dropna(subset=["pe_top_z"])
        if table is not None and len(table):
            left.plot(table["step"], table["pe_top_z"].abs(), color="black", marker="s", ms=3, label="position table (mean row)")
            top = max(top, float(table["pe_top_z"].abs().max()))
        left.set(ylabel="|robust z| of top dim", ylim=(0, max(threshold, top) * 1.1), title=f"{name}: outlier strength")
        right.set(ylabel="% of vectors", ylim=(0, 100), title=f"{name}: share of one dim")
    for ax in axes[-1]:
        ax.set_xlabel("training step")
    plotting.legend_above(fig, axes[0, 0])
    return fig


PRETRAIN_SUMMARY = CHAPTER.table(
    "summary",
    "model seed position_embeddings parameters_millions n_layers width steps tokens_seen_millions training_minutes training_precision valid_perplexity "
    "unigram_perplexity "
    "top_extreme_kind top_extreme_dim top_extreme_percent model_outliers",
)


PRETRAIN_GAP = CHAPTER.table(
    "perplexity_gap",
    "seed validation_blocks masked_tokens perplexity_with_pe perplexity_without_pe ratio_without_over_with ratio_low_95 ratio_high_95",
)


PRETRAIN_OUTLIERS = CHAPTER.table("outlier_dimensions", OUTLIER_COLUMNS)
TRAINING_HISTORY = CHAPTER.table("training_history", "step tokens_seen train_loss valid_loss valid_perplexity lr seconds pe_top_dim pe_top_z")
OUTLIER_TRACK = CHAPTER.table("outlier_track", "layer top_dim top_mean top_z argmax_dim argmax_percent argmin_dim argmin_percent step")
PRETRAIN_EXTREMES = CHAPTER.table("extreme_dimensions_pooled", "kind dim percent n_vectors model")
PRETRAIN_EMBEDDING_TABLES = CHAPTER.table(  # as chapter 03's `embedding_tables`, for the trained model with position embeddings
    "embedding_tables",
    "table n_rows argmax_dim argmax_percent argmin_dim argmin_percent rows_with_flagged_dim rows_with_flagged_dim_percent",
)


def stable_top(t: pd.DataFrame, layer: int) -> tuple[int, int]:
    """The last checkpoint's top dimension of a layer, and how many consecutive final checkpoints it held the top."""
    dims = t[t["layer"] == layer].sort_values("step")["top_dim"].to_numpy()
    held = int(np.argmax(dims[::-1] != dims[-1])) if (dims != dims[-1]).any() else len(dims)
    return int(dims[-1]), held


def _tokens(count: float) -> str:
    """A count of training tokens as read: millions with one decimal from a million on, else the whole number."""
    return f"{count / 1e6:.1f} M tokens" if count >= 1e6 else f"{int(count):,} tokens"


def _findings(
    first: tuple[str, str],
    configs: Mapping[str, masked_lm.PretrainConfig],
    histories: Mapping[str, pd.DataFrame],
    tracks: Mapping[str, pd.DataFrame],
    reports: Mapping[str, OutlierReport],
    position_summary: pd.DataFrame,
    gap: pd.DataFrame,
    unigram: float,
    z_threshold: float,
) -> list[str]:
    """The chapter's "what our run shows" bullets: each of the first seed's runs (with, without position embeddings), the
    position table, the perplexity ratio over seeds and the outlier track's peak."""
    lines = []
    for name in first:
        cfg, h, t = configs[name], histories[name], tracks[name]
        dims = ", ".join(f"{r.dim} ({r.sign}, layers {r.layers})" for r in reports[name].model_outliers.itertuples()) or "none"
        best = reports[name].pooled.loc[reports[name].pooled["percent"].idxmax()]
        last_layer = int(t["layer"].max())
        top, held = stable_top(t, last_layer)
        last_z = float(t[(t["layer"] == last_layer) & (t["step"] == t["step"].max())]["top_z"].iloc[0])
        lines.append(
            f"- **{name}** ({'with' if cfg.position_embeddings else 'without'} position embeddings): validation perplexity "
            f"{h['valid_perplexity'].iloc[0]:.1f} at step {int(h['step'].iloc[0]):,} → {h['valid_perplexity'].iloc[-1]:.1f} at step "
            f"{int(h['step'].iloc[-1]):,} ({_tokens(h['tokens_seen'].iloc[-1])}, {h['seconds'].sum() / 60:.1f} min). "
            f"In the last layer of the validation track, dimension {top} has the largest |mean| (robust z {last_z:+.1f}) and held that place "
            f"for the last {held} of {t['step'].nunique()} checkpoints. On SST-2, model-level outlier dimensions: {dims}; over all contextual "
            f"layers dimension {best['dim']} is the {EXTREME[best['kind']]} of {best['percent']:.1f}% of vectors."
        )
    pe_after = position_summary.set_index("table").loc[AFTER_FIRST]
    lines.append(
        f"- The PE model's position table: {pe_after['rows_with_flagged_dim_percent']:.1f}% of positions after the first have a flagged "
        f"dimension; dimension {int(pe_after['argmax_dim'])} is the maximum of {pe_after['argmax_percent']:.1f}% of them."
    )
    peak = {name: float(tracks[name]["top_z"].abs().max()) for name in first}
    table_z = histories[first[0]]["pe_top_z"].abs()
    log_ratio = np.log(gap["ratio_without_over_with"])
    lines.append(
        "- Perplexity ratio without/with position embeddings on the same masked validation tokens, per seed: "
        + ", ".join(
            f"{r:.3f}× ({lo:.3f} to {hi:.3f})" for r, lo, hi in gap[["ratio_without_over_with", "ratio_low_95", "ratio_high_95"]].itertuples(index=False)
        )
        + f"; geometric mean over the {len(gap)} seeds {np.exp(log_ratio.mean()):.2f}× (paper: 354.0 / 4.3 = 82×). Token frequencies alone give {unigram:.1f}."
    )
    lines.append(
        "- Largest |robust z| of a layer's top dimension at any checkpoint: "
        + ", ".join(f"{name} {z:.1f}" for name, z in peak.items())
        + f" (outlier threshold {z_threshold:g}); the PE model's position table reached {table_z.max():.1f} (at step "
        f"{int(histories[first[0]].loc[table_z.idxmax(), 'step']):,}) and ends at {table_z.iloc[-1]:.1f}."
    )
    return lines


@CHAPTER.rule
def pe_lowers_perplexity(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    if len(t) < 2:
        return Outcome(UNTESTABLE, f"{len(t)} seed: a verdict over seeds needs at least two")
    log_ratio = inference.mean_t(np.log(t["ratio_without_over_with"]), "seeds")
    estimate = log_ratio.back_transformed("log", log_ratio.method + " (log ratio)")
    per_seed = ", ".join(f"{r:.2f}×" for r in t["ratio_without_over_with"])
    return outcome(
        decide(estimate, claim.margin), f"perplexity without / with position embeddings per seed {per_seed}; geometric mean {estimate.text(2, '×')}", estimate
    )


@CHAPTER.rule
def outliers_only_with_pe(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    pe, nope = (t[t["position_embeddings"].astype(bool) == flag].set_index("seed") for flag in (True, False))
    seeds = pe.index.intersection(nope.index)
    if len(seeds) < 2:
        return Outcome(UNTESTABLE, f"{len(seeds)} seed: a verdict over seeds needs at least two")
    control = "model-level outliers (robust z), with / without PE per seed: " + ", ".join(
        f"{pe.loc[s, 'model_outliers']}/{nope.loc[s, 'model_outliers']}" for s in seeds
    )
    if (pe.loc[seeds, "model_outliers"] == 0).all():  # manipulation check: the claim is about an outlier that forms with PE
        return Outcome(
            UNTESTABLE,
            f"not testable at this scale: none of the {len(seeds)} runs with position embeddings formed a model-level outlier, so there is "
            "no outlier whose presence could depend on them (the paper trained RoBERTa-base for 200k steps of 256 sequences; a longer run, "
            "as the paper profile's, would test it)",
            control=control,
        )
    gap = pe.loc[seeds, "top_extreme_percent"] - nope.loc[seeds, "top_extreme_percent"]
    estimate = inference.mean_t(gap, "seeds")
    shares = "; ".join(
        f"seed {s}: dim {pe.loc[s, 'top_extreme_dim']} {pe.loc[s, 'top_extreme_percent']:.0f}% with PE, dim {nope.loc[s, 'top_extreme_dim']} "
        f"{nope.loc[s, 'top_extreme_percent']:.0f}% without"
        for s in seeds
    )
    return outcome(
        decide(estimate, claim.margin),
        f"most frequent extreme dimension's share of vectors, with minus without PE: {estimate.text(1, ' points')} ({shares})",
        estimate,
        control,
    )


EMBEDDING_DRIFT = CHAPTER.table(
    "embedding_drift",
    "model seed position_embeddings stage bin tokens min_count max_count mean_cosine_to_mean mean_norm_over_avg_norm",
)
FREQUENCY_BINS = 5  # quantile bins of the training corpus's token frequencies (rarest first)


def token_counts(blocks: masked_lm.shards.Blocks, vocab: int) -> np.ndarray:
    """How often each token id occurs in the training blocks (framing tokens not counted)."""
    counts = np.zeros(vocab, dtype=np.int64)
    for chunk in blocks.token_chunks():
        counts += np.bincount(chunk, minlength=vocab)[:vocab]
    return counts


def embedding_drift(name: str, seed: int, position_embeddings: bool, stages: Mapping[str, np.ndarray], counts: np.ndarray, special: list[int]) -> pd.DataFrame:
    """Per stage (the seeded initial matrix, the trained one) of a model's input embedding matrix: how far its rows share
    one direction (the mean row's norm over the rows' average norm, Biš et al.'s Table 1 ratio) and, per frequency bin
    of the training corpus (FREQUENCY_BINS quantile bins of the seen tokens, rarest first; never-seen tokens apart),
    the rows' mean cosine with the mean row. Special tokens are left out."""
    keep = np.setdiff1d(np.arange(len(counts)), special)
    seen = keep[counts[keep] > 0]
    order = seen[np.argsort(counts[seen], kind="stable")]
    bins = {f"bin {i + 1} of {FREQUENCY_BINS}": part for i, part in enumerate(np.array_split(order, FREQUENCY_BINS))}
    if (unseen := keep[counts[keep] == 0]).size:
        bins = {"never seen": unseen, **bins}
    rows = []
    for stage, w in stages.items():
        w = np.asarray(w, dtype=np.float64)[keep]
        mean = w.mean(axis=0)
        ratio = float(np.linalg.norm(mean) / np.linalg.norm(w, axis=1).mean())
        cosines = (w @ mean) / (np.linalg.norm(w, axis=1) * np.linalg.norm(mean))
        by_id = dict(zip(keep, cosines))
        for label, ids in {"all": keep, **bins}.items():
            rows.append(
                {
                    "model": name,
                    "seed": seed,
                    "position_embeddings": position_embeddings,
                    "stage": stage,
                    "bin": label,
                    "tokens": len(ids),
                    "min_count": int(counts[ids].min()),
                    "max_count": int(counts[ids].max()),
                    "mean_cosine_to_mean": float(np.mean([by_id[i] for i in ids])),
                    "mean_norm_over_avg_norm": ratio,
                }
            )
    return EMBEDDING_DRIFT.frame(rows)


def drift_view(drift: pd.DataFrame) -> pd.DataFrame:
    """One row per run and stage: the mean row's norm over the average row norm, and each frequency bin's mean cosine
    with the mean row (columns rarest first)."""
    view = drift.pivot_table(index=["model", "stage"], columns="bin", values="mean_cosine_to_mean", sort=False)
    ratio = drift.groupby(["model", "stage"], sort=False)["mean_norm_over_avg_norm"].first()
    view = view.rename(columns=lambda c: re.sub(r"^bin (\d+) of \d+$", r"bin \1", str(c)))  # the caption says how many bins
    return view.assign(**{"|mean| / avg norm": ratio}).reset_index().rename_axis(columns=None)


def _drift_runs(tables: Tables, model: str, claim: Claim) -> pd.DataFrame | None:
    t = tables.read(model, claim.chapter, claim.table)
    return t if t is not None and t["model"].nunique() >= 2 else None


@CHAPTER.rule
def drift_arises_in_training(tables: Tables, model: str, claim: Claim) -> Outcome:
    """The rows of the input embedding matrix come to share one direction during training: the mean row's norm over the
    average row norm, trained minus initial, per run; t over the runs (each trained from its own seed)."""
    t = _drift_runs(tables, model, claim)
    if t is None:
        return Outcome(UNTESTABLE, "fewer than two pre-training runs: no spread over runs to test against")
    whole = t[t["bin"] == "all"].pivot(index="model", columns="stage", values="mean_norm_over_avg_norm")
    rise = whole["trained"] - whole["initial"]
    estimate = inference.mean_t(rise, "pre-training runs")
    text = f"|mean row| / average row norm, trained minus initial: {estimate.text(3)}; per run " + ", ".join(
        f"{whole.loc[m, 'initial']:.3f} → {whole.loc[m, 'trained']:.3f}" for m in whole.index
    )
    return outcome(decide(estimate, claim.margin), text, estimate)


@CHAPTER.rule
def drift_strongest_for_rare(tables: Tables, model: str, claim: Claim) -> Outcome:
    """After training, the rarest tokens' rows point along the mean row more than the most frequent ones': mean cosine
    with the mean row, rarest seen bin minus most frequent bin, per run; t over the runs."""
    t = _drift_runs(tables, model, claim)
    if t is None:
        return Outcome(UNTESTABLE, "fewer than two pre-training runs: no spread over runs to test against")
    trained = t[t["stage"] == "trained"]
    rarest, commonest = f"bin 1 of {FREQUENCY_BINS}", f"bin {FREQUENCY_BINS} of {FREQUENCY_BINS}"
    wide = trained.pivot(index="model", columns="bin", values="mean_cosine_to_mean")
    gap = wide[rarest] - wide[commonest]
    estimate = inference.mean_t(gap, "pre-training runs")
    initial = t[t["stage"] == "initial"].pivot(index="model", columns="bin", values="mean_cosine_to_mean")
    control = f"at initialisation the same gap is {float((initial[rarest] - initial[commonest]).mean()):+.3f} on average"
    text = f"mean cosine with the mean row, rarest fifth minus most frequent fifth of the tokens, trained: {estimate.text(3)}"
    return outcome(decide(estimate, claim.margin), text, estimate, control)


@dataclass(frozen=True)
class Setup:
    pairs: dict[int, tuple[str, str]]  # per seed: the (with, without position embeddings) model names
    configs: dict[str, masked_lm.PretrainConfig]  # every run's configuration
    criterion: Criterion  # chapter 02's outlier criterion, read in the trained models as in the others
    edition: str  # the profile: the edition whose runs these are (`check_free`)

    @property
    def first(self) -> tuple[str, str]:
        """The first seed's pair: the one the figures show and chapters 10-12 read (chapter05:pe, chapter05:nope)."""
        return next(iter(self.pairs.values()))


def inputs(parameters: Mapping[str, object], profile: str) -> Setup:
    """The chapter's runs from its parameters (the cell's namespace), every value checked first."""
    require(isinstance(parameters["retrain"], bool), f"retrain must be True or False, got {parameters['retrain']!r}")
    positive_int("track_blocks", parameters["track_blocks"])
    positive_int("seeds", parameters["seeds"])
    pairs, configs = pretraining_runs(parameters)
    criterion, source = recorded_criterion(profile)
    print(f"outlier criterion: |robust z| ≥ {criterion.z_threshold:g} in ≥ {criterion.min_layer_share:.0%} of the contextual layers, {source}")
    return Setup(pairs, configs, criterion, profile)


def recorded_criterion(profile: str) -> tuple[Criterion, str]:
    """Chapter 02's z threshold and layer share as its run in this edition recorded them beside each model's average
    vectors (as `outlier_set.reference` reads them for the chapters that clip), with where they come from; where chapter
    02 has not run in this edition, those of its parameters in it. (Chapter 05 analyses a sample of its own.)"""
    planned = outlier_set.outlier_criterion(profile)
    ran = store.models_with(profile, outlier_set.CHAPTER, outlier_set.SOURCE_TABLE)
    if not ran:  # what it would have read, recorded as missing: chapter 02's first run makes this chapter stale
        for model in comma_list(str(chapter_parameters(outlier_set.CHAPTER, profile)["models"])):
            record("results", store.meta_path(profile, model, outlier_set.CHAPTER), f"chapter 02's outlier criterion for {model} ({profile})")
        return planned, f"chapter 02's parameters in the {profile} edition (chapter 02 has not run in it)"
    used = {}
    for model in ran:
        record("results", store.meta_path(profile, model, outlier_set.CHAPTER), f"chapter 02's outlier criterion for {model} ({profile})")
        recorded = store.recorded_parameters(profile, model, outlier_set.CHAPTER)
        try:
            used[model] = (float(recorded["z_threshold"]), float(recorded["min_layer_share"]))
        except (KeyError, TypeError, ValueError) as err:
            raise BookError(f"{store.meta_path(profile, model, outlier_set.CHAPTER)} records no outlier criterion ({err!r}); run chapter 02 again") from None
    require(
        len(set(used.values())) == 1,
        f"chapter 02's results in the {profile} edition record different outlier criteria "
        f"({'; '.join(f'{m}: z {z:g}, layer share {s:g}' for m, (z, s) in used.items())}); run chapter 02 again on all its models",
    )
    z_threshold, min_layer_share = used[ran[0]]
    source = f"as chapter 02's run in the {profile} edition recorded it ({', '.join(ran)})"
    return replace(planned, z_threshold=z_threshold, min_layer_share=min_layer_share), source


@dataclass(frozen=True)
class Corpus:
    tokenizer: PreTrainedTokenizerFast  # byte-level BPE trained on the training split
    train: masked_lm.shards.Blocks
    valid: masked_lm.shards.Blocks
    unigram: float  # the validation tokens' perplexity under the training token frequencies (no context)


def corpus(setup: Setup) -> Corpus:
    """The pre-training corpus in blocks and its tokenizer, shared by every run; one example tokenized, and the unigram
    perplexity, printed."""
    tokenizer, train, valid = masked_lm.prepare_corpus(next(iter(setup.configs.values())))
    unigram = masked_lm.unigram_perplexity(train, valid, tokenizer)
    print("tokenized:", tokenizer.convert_ids_to_tokens(tokenizer("The position of a word in a sentence matters.")["input_ids"]))
    print(f"unigram perplexity of the validation tokens (training-set token frequencies, no context): {unigram:.1f}")
    return Corpus(tokenizer, train, valid, unigram)


def corpus_table(corpus: Corpus) -> pd.DataFrame:
    return pd.DataFrame(
        {"split": ["train", "validation"], "blocks": [len(corpus.train), len(corpus.valid)], "tokens": [corpus.train.numel(), corpus.valid.numel()]}
    )


def train(
    setup: Setup, corpus: Corpus, *, track_blocks: int, device: str, retrain: bool, results: Writer, parameters: dict
) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Every run trained (or reused where it was saved with the same settings and code): its training history and
    outlier track, both written."""
    corpus_blocks = (corpus.tokenizer, corpus.train, corpus.valid)
    trained = train_unless_saved(setup.configs, corpus_blocks, track_blocks=track_blocks, device=device, edition=setup.edition, retrain=retrain)
    for name, cfg in setup.configs.items():
        history, track = trained[name]
        results.table(history, TRAINING_HISTORY, f"trained:{name}", parameters=parameters, model_info={"name": name, "seed": cfg.seed})
        results.table(track, OUTLIER_TRACK, f"trained:{name}", parameters=parameters, model_info={"name": name, "seed": cfg.seed})
    return trained


@dataclass(frozen=True)
class TrainedRun:
    name: str  # the run's model name
    history: pd.DataFrame  # TRAINING_HISTORY
    track: pd.DataFrame  # OUTLIER_TRACK
    size: dict  # trained parameters, layers, width
    drift: pd.DataFrame  # its rows of EMBEDDING_DRIFT
    stats: LayerStats  # chapter 02's statistics on the SST-2 sentences
    report: OutlierReport  # chapter 02's outlier analysis of them


def run(
    name: str,
    setup: Setup,
    corpus: Corpus,
    trained: dict[str, tuple[pd.DataFrame, pd.DataFrame]],
    sentences: list[str],
    *,
    results: Writer,
    parameters: dict,
    device: str = "auto",
    dtype: str = "auto",
) -> TrainedRun:
    """One trained model, loaded from the models folder as any chapter loads it: how its input embeddings drifted from
    their seeded start, and chapter 02's outlier analysis on SST-2 sentences (two tables written)."""
    cfg, criterion = setup.configs[name], setup.criterion
    lm = load_model(f"trained:{name}", device=device, dtype=dtype)
    trainable = sum(p.numel() for n, p in lm.model.named_parameters() if cfg.position_embeddings or "position_embeddings" not in n)
    size = dict(parameters_millions=trainable / 1e6, n_layers=lm.n_layers, width=lm.width)
    stages = {"initial": masked_lm.build_model(cfg, corpus.tokenizer).get_input_embeddings().weight.detach().numpy()}  # the seeded start
    stages["trained"] = lm.model.get_input_embeddings().weight.detach().float().cpu().numpy()
    drift = embedding_drift(
        name, cfg.seed, cfg.position_embeddings, stages, token_counts(corpus.train, len(corpus.tokenizer)), corpus.tokenizer.all_special_ids
    )
    st = outlier_set.statistics(lm, sentences)
    info = {"name": name, "seed": cfg.seed, "n_layers": lm.n_layers, "width": lm.width, "n_tokens": st.count}
    report = outliers.analyse(
        st.mean, st.argmin_counts, st.argmax_counts, n_vectors=st.count, z_threshold=criterion.z_threshold, min_layer_share=criterion.min_layer_share
    )
    report.pooled = report.pooled.assign(model=name)
    results.table(report.detected, PRETRAIN_OUTLIERS, f"trained:{name}", parameters=parameters, model_info=info)
    results.table(report.pooled, PRETRAIN_EXTREMES, f"trained:{name}", parameters=parameters, model_info=info)
    return TrainedRun(name, *trained[name], size, drift, st, report)


def _pair_info(setup: Setup) -> dict:
    first = setup.first
    return {"name": f"{first[0]} vs {first[1]}"}


def drift_table(runs: dict[str, TrainedRun], setup: Setup, results: Writer, parameters: dict) -> pd.DataFrame:
    """Every run's embedding drift, written as the chapter's table."""
    drift = pd.concat([r.drift for r in runs.values()], ignore_index=True)
    results.table(drift, EMBEDDING_DRIFT, store.CHAPTER, parameters=parameters, model_info=_pair_info(setup))
    return drift


def paper_runs() -> pd.DataFrame:
    """Luo et al.'s two pre-training runs: validation perplexity and the outlier dimension (an index, printed as one)."""
    runs = paper.table("luo2021", "pretraining")[["model", "paper_validation_perplexity", "paper_outlier_dim", "paper_outlier_percent"]]
    return runs.astype({"paper_outlier_dim": "Int64"}).rename(
        columns={"paper_outlier_dim": "paper: outlier dimension", "paper_outlier_percent": "paper: its %"}
    )


def figure_training_curves(runs: dict[str, TrainedRun], corpus: Corpus, seeds: int, results: Writer) -> None:
    fig = training_curves({n: r.history for n, r in runs.items()}, reference=("unigram (no context)", corpus.unigram))
    caption = (
        f"Training loss and validation perplexity of the {len(runs)} runs ({seeds} seeds per condition); dashed: the perplexity of token frequencies alone."
    )
    final = "; ".join(f"{n} {r.history['valid_perplexity'].iloc[-1]:.1f}" for n, r in runs.items())
    steps = int(next(iter(runs.values())).history["step"].iloc[-1])
    alt = f"Validation perplexity after {steps:,} steps: {final}; token frequencies alone give {corpus.unigram:.1f}."
    results.figure(fig, "training_curves", caption, alt=alt)


def gap(setup: Setup, corpus: Corpus, results: Writer, parameters: dict, device: str) -> pd.DataFrame:
    """Per seed, both final models' validation perplexity on the same masked tokens and their ratio (written)."""
    frame = PRETRAIN_GAP.frame(
        perplexity_gap(models_dir(), pair, setup.configs, tokenizer=corpus.tokenizer, blocks=corpus.valid, device=device) for pair in setup.pairs.values()
    )
    results.table(frame, PRETRAIN_GAP, store.CHAPTER, parameters=parameters, model_info=_pair_info(setup))
    return frame


def gap_view(gap_frame: pd.DataFrame) -> pd.DataFrame:
    """The PRETRAIN_GAP table as the page shows it: in words, the ratio beside its interval."""
    return pd.DataFrame(
        {
            "seed": gap_frame["seed"],
            "validation blocks": gap_frame["validation_blocks"],
            "masked tokens": gap_frame["masked_tokens"],
            "perplexity with position embeddings": gap_frame["perplexity_with_pe"],
            "perplexity without": gap_frame["perplexity_without_pe"],
            "ratio without / with (95% interval)": [
                f"{r:.3f} ({lo:.3f} to {hi:.3f})"
                for r, lo, hi in gap_frame[["ratio_without_over_with", "ratio_low_95", "ratio_high_95"]].itertuples(index=False)
            ],
        }
    )


def answer(gap_frame: pd.DataFrame, summary_frame: pd.DataFrame) -> list[str]:
    """The chapter's answer: the perplexity ratio without / with position embeddings (geometric mean over seeds with the
    t-interval of the log ratio, as the scorecard tests it, beside the paper's), how many runs formed a model-level
    outlier with and without them, and the most frequent extreme dimension's share in each (with minus without, t over
    seeds); with the tokens each run saw."""
    ratios = gap_frame["ratio_without_over_with"]
    if len(ratios) >= 2:
        log_ratio = inference.mean_t(np.log(ratios), "seeds")
        ratio = log_ratio.back_transformed("log", log_ratio.method)
        how = f"geometric mean, 95% interval {ratio.low:.2f} to {ratio.high:.2f} over {len(ratios)} seeds"
    else:
        row = gap_frame.iloc[0]
        ratio = inference.from_interval(row["ratio_without_over_with"], row["ratio_low_95"], row["ratio_high_95"], "validation blocks")
        how = f"one seed, 95% interval {ratio.low:.2f} to {ratio.high:.2f} over validation blocks"
    effect = "lower" if ratio.low > 1 else "raise" if ratio.high < 1 else "do not measurably change"
    theirs = paper.table("luo2021", "pretraining").set_index("paper_position_embeddings")["paper_validation_perplexity"]
    pe, nope = (summary_frame[summary_frame["position_embeddings"].astype(bool) == flag].set_index("seed") for flag in (True, False))
    formed = " and ".join(
        f"{int((part['model_outliers'] > 0).sum())} of {len(part)} {which}" for part, which in ((pe, "runs with position embeddings"), (nope, "without"))
    )
    seeds = pe.index.intersection(nope.index)
    share = f"{pe['top_extreme_percent'].mean():.1f}% of vectors with them and {nope['top_extreme_percent'].mean():.1f}% without, on average"
    if len(seeds) >= 2:
        diff = inference.mean_t(pe.loc[seeds, "top_extreme_percent"] - nope.loc[seeds, "top_extreme_percent"], "seeds")
        share += f" (difference {diff.value:.1f} points, 95% interval {diff.low:.1f} to {diff.high:.1f})"
    tokens = _tokens(summary_frame["tokens_seen_millions"].iloc[0] * 1e6)
    return [
        f"At this scale position embeddings {effect} the validation perplexity: without them it is {ratio.value:.2f} times that with them ({how}), "
        f"against {theirs[False] / theirs[True]:.0f} times in the paper.",
        f"After {tokens} of training per run, a model-level outlier formed in {formed}; the most frequent extreme dimension holds {share}.",
    ]


def figure_outlier_track(runs: dict[str, TrainedRun], setup: Setup, results: Writer) -> None:
    first = setup.first
    fig = outlier_track({n: runs[n].track for n in first}, setup.criterion.z_threshold, {n: runs[n].history for n in first})
    caption = (
        "The outlier track: per checkpoint and layer, how far the largest-mean dimension stands out (left) and the share of vectors whose "
        "maximum lies in the most frequent dimension (right)."
    )
    peaks = "; ".join(
        f"{n}: largest |robust z| {runs[n].track['top_z'].abs().max():.1f}, largest share {runs[n].track['argmax_percent'].max():.1f}%" for n in first
    )
    results.figure(fig, "outlier_track", caption, alt=f"Across checkpoints, against an outlier threshold of {setup.criterion.z_threshold:g}: {peaks}.")


def last_checkpoint_tables(runs: dict[str, TrainedRun], setup: Setup) -> dict[str, pd.DataFrame]:
    """The first pair's last checkpoint: per layer, the largest-|mean| dimension and the most frequent maximum/minimum."""
    out = {}
    for name in setup.first:
        t = runs[name].track
        last = t[t["step"] == t["step"].max()]
        out[name] = last[["layer", *TRACK_WORDS]].rename(columns=TRACK_WORDS)
    return out


TRACK_WORDS = {
    "top_dim": "largest-|mean| dimension",
    "top_mean": "its mean",
    "top_z": "its robust z",
    "argmax_dim": "maximum: dimension",
    "argmax_percent": "maximum: % of vectors",
    "argmin_dim": "minimum: dimension",
    "argmin_percent": "minimum: % of vectors",
}  # an OUTLIER_TRACK column in words


def summary(runs: dict[str, TrainedRun], setup: Setup, corpus: Corpus, results: Writer, parameters: dict) -> pd.DataFrame:
    """Every run's row: size, training, final perplexity, extreme share and model-level outliers (written)."""
    frame = PRETRAIN_SUMMARY.frame(
        run_summary(name, setup.configs[name], r.history, size=r.size, report=r.report, unigram=corpus.unigram) for name, r in runs.items()
    )
    results.table(frame, PRETRAIN_SUMMARY, store.CHAPTER, parameters=parameters, model_info=_pair_info(setup))
    return frame


def training_view(summary_frame: pd.DataFrame) -> pd.DataFrame:
    columns = [
        "model",
        "seed",
        "position_embeddings",
        "parameters_millions",
        "n_layers",
        "width",
        "steps",
        "tokens_seen_millions",
        "training_minutes",
        "training_precision",
        "valid_perplexity",
    ]
    return summary_frame[columns].rename(columns={"n_layers": "layers", "training_precision": "precision", "valid_perplexity": "validation perplexity"})


def extremes_view(summary_frame: pd.DataFrame) -> pd.DataFrame:
    """Every run's most frequent extreme dimension and its share, and its number of model-level outliers, in words."""
    shown = summary_frame[["model", "top_extreme_kind", "top_extreme_dim", "top_extreme_percent", "model_outliers"]].replace({"top_extreme_kind": EXTREME})
    words = {"top_extreme_kind": "most frequent extreme", "top_extreme_dim": "its dimension", "top_extreme_percent": "% of vectors"}
    return shown.rename(columns=words | {"model_outliers": "outliers of the model"})


def figures_average_vectors(runs: dict[str, TrainedRun], setup: Setup, results: Writer) -> None:
    for name in setup.first:
        st, report = runs[name].stats, runs[name].report
        caption = (
            f"{name}: the average token vector of every layer on {st.count:,} SST-2 tokens; its outlier dimensions in colour (filled where flagged "
            "in that layer), other flagged dimensions grey."
        )
        marked = report.model_outliers["dim"].astype(int).tolist()
        fig = average_vectors(st.mean, report.flags, marked)
        results.figure(fig, f"average_vectors_{name}", caption, tab=name, alt=average_vectors_alt(name, st.mean, report.flags, marked))


def detected_tables(runs: dict[str, TrainedRun], setup: Setup) -> dict[str, pd.DataFrame]:
    return {name: runs[name].report.detected for name in setup.first}


def pooled_view(runs: dict[str, TrainedRun], setup: Setup) -> pd.DataFrame:
    pooled = pd.concat([runs[n].report.pooled for n in setup.first], ignore_index=True)[["model", "kind", "dim", "percent", "n_vectors"]]
    return pooled.replace({"kind": EXTREME})


@dataclass(frozen=True)
class PositionTable:
    name: str  # the model with position embeddings
    view: positional.PositionView  # its embedding tables
    ranks: pd.DataFrame  # its outlier dimensions' ranks among the LayerNorm parameters


def position_table(runs: dict[str, TrainedRun], setup: Setup, results: Writer, parameters: dict, device: str = "auto", dtype: str = "auto") -> PositionTable:
    """The first model with position embeddings seen as chapter 03 sees a model: its embedding tables (written) and
    its outlier dimensions' LayerNorm ranks; two figures drawn."""
    name, z_threshold = setup.first[0], setup.criterion.z_threshold
    lm = load_model(f"trained:{name}", device=device, dtype=dtype)
    view = positional.position_view(lm, z_threshold)
    model_dims = runs[name].report.model_outliers
    ranks = positional.parameter_ranks(positional.layernorms(lm), model_dims["dim"].to_numpy(), model_dims["sign"].tolist())
    results.table(view.summary, PRETRAIN_EMBEDDING_TABLES, f"trained:{name}", parameters=parameters)
    chosen = view.example_rows()
    matrix = view.matrix(chosen)
    flags = np.abs(outliers.robust_z(matrix)) >= z_threshold
    dims = model_dims["dim"].to_numpy().astype(int)
    fig = marked_vectors(matrix, flags, [f"position {p}" for p in chosen], dims, ylabel="value")
    caption = f"{name}: the learned position embeddings of a few positions; its outlier dimensions in colour, other flagged dimensions grey."
    results.figure(fig, f"position_embeddings_{name}", caption, alt=rows_alt(name, chosen, flags, dims))
    if len(model_dims):
        caption = f"{name}: rank of each outlier dimension among the LayerNorm gains and biases."
        results.figure(layernorm_ranks(ranks), "layernorm_ranks", caption, alt=layernorm_ranks_alt(name, ranks))
    return PositionTable(name, view, ranks)


def position_tables_view(table: PositionTable) -> pd.DataFrame:
    return embedding_tables_view(table.view.summary)


def findings(runs: dict[str, TrainedRun], setup: Setup, corpus: Corpus, table: PositionTable, gap_frame: pd.DataFrame) -> list[str]:
    """What our run shows: each of the first seed's runs, the position table, the perplexity ratio over seeds and the
    outlier track's peak."""
    return _findings(
        setup.first,
        setup.configs,
        histories={n: r.history for n, r in runs.items()},
        tracks={n: r.track for n, r in runs.items()},
        reports={n: r.report for n, r in runs.items()},
        position_summary=table.view.summary,
        gap=gap_frame,
        unigram=corpus.unigram,
        z_threshold=setup.criterion.z_threshold,
    )


def onset_lines(runs: dict[str, TrainedRun], setup: Setup, corpus: Corpus) -> str:
    """Exercise ex-05-curves: when each of the first pair first beats the unigram perplexity, and its final perplexity."""
    lines = []
    for name in setup.first:
        h = runs[name].history
        below = h[h["valid_perplexity"] < corpus.unigram]
        onset = (
            f"below the unigram perplexity ({corpus.unigram:.0f}) from step {int(below['step'].iloc[0])}"
            if len(below)
            else (f"never below the unigram perplexity ({corpus.unigram:.0f})")
        )
        lines.append(f"- **{name}**: {onset}; final validation perplexity {h['valid_perplexity'].iloc[-1]:.1f}.")
    return "\n".join(lines)


def ratio_table(runs: dict[str, TrainedRun], setup: Setup) -> pd.Series:
    """Exercise ex-05-longer: the first pair's perplexity ratio (without / with position embeddings) at each evaluation."""
    with_pe, without_pe = (runs[n].history.set_index("step")["valid_perplexity"] for n in setup.first)
    return (without_pe / with_pe).dropna().rename("perplexity without PE / with PE")


def ratio_note(ratio: pd.Series) -> str:
    return (
        f"The ratio moved from {ratio.iloc[max(0, len(ratio) - 4)]:.3f} to {ratio.iloc[-1]:.3f} over the last evaluations. "
        "In the paper's runs the model with position embeddings ends far ahead (354.0 / 4.3 ≈ 82); a ratio that rises towards the end "
        "suggests the gap opens with more training, one that stays near 1 that both models are still learning word frequencies "
        "rather than word order."
    )
