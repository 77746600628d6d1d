"""Chapter 13: isotropy calibration during fine-tuning (Ding et al. 2022): the grid of runs, its summary, tables,
figures and verdict rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from tqdm import tqdm

from ..core import paper
from ..core.declaration import chapter
from ..core.profiles import config
from ..core.sources import names
from ..datasets.tasks import GLUE_TASKS, glue_samples
from ..encode.models import load_model
from ..errors import require
from ..measure import inference
from ..measure.inference import Estimate
from ..measure.metrics import student_p, welch_p
from ..provenance import record
from ..settings import autocast_precision, pick_device
from ..train import workers
from ..train.finetune import METHODS, FinetuneConfig, cached_run, step_times
from .plotting import COLORS, PAGE_WIDTH
from .verdicts import FAILS, MIXED, NOT_RUN, UNTESTABLE, Claim, Outcome, Tables, decide, from_units, outcome, unit

CHAPTER = chapter(
    "13_isotropy_calibration",
    allowed={
        "workers": 'cores, "" (no workers), local:N, or a Dask scheduler address (tcp://host:8786)',
        "methods": "comma-separated, any of: " + ", ".join(METHODS),
    },
)


def calibration_summary(summary: pd.DataFrame, methods: list[str]):
    """Per calibration method: score change vs no calibration by task (mean ± std of the method's runs),
    I1 of W after fine-tuning, and time per epoch relative to no calibration."""
    tasks = list(dict.fromkeys(summary["task"]))
    fig = plt.figure(figsize=(PAGE_WIDTH, 7.5))  # the tasks' bars across the top, isotropy and cost below
    grid = fig.add_gridspec(2, 2, height_ratios=[1.1, 1])
    axes = [fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])]
    width = 0.8 / max(1, len(methods))
    for i, (method, color) in enumerate(zip(methods, COLORS)):
        rows = summary[summary["method"] == method].set_index("task").reindex(tasks)
        x = np.arange(len(tasks)) + (i - (len(methods) - 1) / 2) * width
        axes[0].bar(x, rows["difference"], width, yerr=rows["score_std"], color=color, label=method, capsize=2)
    axes[0].axhline(0, color="grey", lw=0.8)
    axes[0].set_xticks(np.arange(len(tasks)), tasks)
    axes[0].set(ylabel="score − uncalibrated score (points)", title="Task score change (error bar: std over seeds)")
    axes[0].legend(frameon=False, fontsize=8, ncol=min(3, len(methods)), loc="lower left")
    by_method = summary.groupby("method", sort=False)[["I1_mean", "time_ratio"]].mean().reindex(methods)
    positions = np.arange(len(methods))
    axes[1].scatter(positions, by_method["I1_mean"], s=80, color=COLORS[: len(methods)], zorder=3)
    for x, value in zip(positions, by_method["I1_mean"]):
        axes[1].annotate(f"{value:.3f}", (x, value), textcoords="offset points", xytext=(0, 8), ha="center", va="bottom", rotation=90, fontsize=8)
    low, high = float(np.nanmin(by_method["I1_mean"])), float(np.nanmax(by_method["I1_mean"]))
    bottom = max(0.0, low - 0.1)
    top = max(1.02, high + 0.35 * (1.02 - bottom))  # room for the upright labels
    axes[1].set(ylabel="I1 of W (1 = isotropic)", title="Isotropy after fine-tuning", ylim=(bottom, top))
    axes[2].bar(positions, by_method["time_ratio"], color=COLORS[: len(methods)])
    axes[2].axhline(1, color="grey", lw=0.8)
    axes[2].set(ylabel="× time per epoch of no calibration", title="Cost")
    for ax in axes[1:]:
        ax.set_xticks(positions, methods, rotation=35, ha="right")
    fig.tight_layout()
    return fig


def spectrum_targets(curves: dict[str, dict[str, np.ndarray]]):
    """Per model: the singular values of W (first curve) and the spectrum-control priors they are pulled towards (log-log)."""
    fig, axes = plt.subplots(1, len(curves), figsize=(5.8 * len(curves), 4.3), squeeze=False)
    for (name, lines), ax in zip(curves.items(), axes[0]):
        for (label, values), style in zip(lines.items(), ["-", "--", ":"]):
            ax.plot(np.arange(1, len(values) + 1), values, style, lw=2, label=label)
        ax.set(xscale="log", yscale="log", xlabel="index k", ylabel=r"singular value $\sigma_k$", title=f"{name}: W and the spectrum priors")
        ax.legend(frameon=False)
    fig.tight_layout()
    return fig


CALIBRATION_SUMMARY = CHAPTER.table(
    "summary",
    "model task metric method runs scored_runs score_mean score_std difference p p_student significant I1_mean I1_std I2_mean I2_std I1_context_mean "
    "I2_context_mean time_ratio penalty_removed",
)

ACTED = 0.5  # the share of its own penalty on W a regulariser must remove in a run before the run can say what it does


def _penalty_removed(group: pd.DataFrame) -> float:
    """Mean over runs of the share of the regulariser's penalty on W that the run removed (1 − after / before); NaN for
    methods without one."""
    if "penalty_start" not in group:
        return float("nan")
    start, end = group["penalty_start"].to_numpy(float), group["penalty_end"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(start > 0, 1 - end / start, np.nan)
    return float(np.nanmean(shares)) if np.isfinite(shares).any() else float("nan")


def calibration_inert(summary: pd.DataFrame, methods: list[str]) -> Outcome | None:
    """ "Not testable at this scale" when no regulariser on W among `methods` removed ACTED of its own penalty in its
    runs: the runs were too short for the calibration to change W, so what they show about isotropy is the run length."""
    rows = summary[summary["method"].isin(methods)]
    removed = rows["penalty_removed"].dropna()
    if removed.empty or (removed >= ACTED).any():
        return None
    return Outcome(
        UNTESTABLE,
        f"not testable at this scale: in these runs the regularisers removed at most {removed.max():.1%} of their own penalty on W "
        f"(a run that can test the claim removes at least {ACTED:.0%}); the paper's runs take thousands of optimiser steps (the GLUE "
        "training sets for 3 epochs: parameters n_train, epochs, lr)",
    )


REGULARISERS = tuple(m for m in METHODS if m not in ("none", "flow"))  # the methods that act on W itself
GPU_EDITION = "the gpu edition (make book PROFILE=gpu) runs every method on the GLUE training sets"


def not_in_this_edition(what: str) -> Outcome:
    """ "Not testable at this scale" for claims whose runs this edition leaves out: a CPU run of a few dozen steps is too
    short for a regulariser to act on W (see `calibration_inert`), so the default edition does not spend its time on them."""
    return Outcome(UNTESTABLE, f"not testable at this scale: this edition runs no {what} (on a CPU its runs are too short to act on W); {GPU_EDITION}")


def _calibration_cells(tables: Tables, model: str, claim: Claim, value: str, spread: str, runs: str = "runs") -> dict[tuple[str, str], Estimate]:
    """Per (task, method) the Welch difference method − uncalibrated of one measured column over seeds (`runs`: the
    column counting the seeds that measured it; a score undefined in a run is not counted)."""
    t = tables.read(model, claim.chapter, claim.table)
    base = t[t["method"] == "none"].set_index("task")
    cells = {}
    for r in t[t["method"] != "none"].itertuples():
        b = base.loc[r.task]
        n, n_base = int(getattr(r, runs)), int(b[runs])
        if n >= 2 and n_base >= 2:
            cells[(r.task, r.method)] = inference.welch(getattr(r, value), getattr(r, spread), n, b[value], b[spread], n_base, "seeds")
    return cells


def findings(ours: pd.DataFrame, theirs: pd.DataFrame, runs: pd.DataFrame, lr: float, flow_layers: int, flow_hidden: int) -> list[str]:
    """The chapter's "what our run shows" bullets: each method's score, isotropy and time next to the paper's, what the
    flow costs, and how far a weight can move in our runs' steps."""
    lines = []
    for row in ours.itertuples():
        paper_rows = theirs[theirs["method"] == row.method]
        paper_text = "; ".join(
            f"{r.model} {r.mean_difference:+.2f}, I1 of the output {r.I1_output_uncalibrated:.2f} → {r.I1_output:.2f}" for r in paper_rows.itertuples()
        )
        lines.append(
            f"- **{row.method}** ({row.model}): score change {row.mean_difference:+.2f} points on average over {row.tasks} tasks "
            f"({row.significantly_better} significantly better, {row.significantly_worse} significantly worse, {row.undefined_scores} undefined); "
            f"I1 of the output embeddings {row.I1_output_uncalibrated:.3f} → {row.I1_output:.3f} (of W: {row.I1_W:.3f}); "
            f"{row.time_ratio:.2f}× the time per epoch. "
            f"Paper: {paper_text or 'not run'}."
        )
    flow_paper = theirs.loc[theirs["method"] == "flow", "time_ratio"].dropna()
    if "flow" in set(ours["method"]) and len(flow_paper):
        lines.append(
            f"- The flow costs {ours.loc[ours['method'] == 'flow', 'time_ratio'].mean():.2f}× the uncalibrated time per epoch here "
            f"(paper, BERT: {flow_paper.iloc[0]:.1f}×); our flow is small ({flow_layers} coupling layers of width {flow_hidden}) "
            "and sees only the pooled vector."
        )
    steps = runs.groupby("task")["steps"].first()
    lines.append(
        f"- Each of our runs took {steps.min()}-{steps.max()} optimiser steps; the paper's take thousands (about 6,300 for SST-2: 67k examples × 3 epochs "
        f"at batch 32). With Adam a weight moves by at most about the learning rate ({lr:g}) per step, so a regulariser on W could change "
        f"each entry by at most ~{lr * steps.max():.1e} here. A method whose I1 does not move in these steps may still move it over the "
        f"paper's thousands, and a score that does not change is no evidence about isotropy either way."
    )
    return lines


def _methods(tables: Tables, model: str, claim: Claim) -> set[str]:
    return set(tables.read(model, claim.chapter, claim.table)["method"])


@CHAPTER.rule
def no_consistent_gain(tables: Tables, model: str, claim: Claim) -> Outcome:
    cells = _calibration_cells(tables, model, claim, "score_mean", "score_std", runs="scored_runs")
    if not cells:
        return Outcome(UNTESTABLE, "fewer than two seeds with a defined score per method: no spread to test against")
    units = []
    for method in dict.fromkeys(m for _, m in cells):
        diffs = [e for (_, m), e in cells.items() if m == method]
        units.append(unit(method, inference.mean_of(diffs, "tasks of Welch differences"), claim.margin, "below", of="methods"))
    detectable = max((u.estimate.high - u.estimate.low) / 2 for u in units)
    decided = from_units(units, claim, 2, " points", f"smallest average gain these seeds could detect: about {detectable:.1f} points")
    missing = [m for m in METHODS if m != "none" and m not in {u.name for u in units}]
    if missing and decided.verdict not in (FAILS, MIXED):  # methods left out can refute nothing, but "no method gains" needs them all
        return not_in_this_edition(", ".join(missing))
    return decided


DEGRADING_TASKS = ("CoLA", "STS-B")  # the paper's examples of spectrum control's "severe performance degradation"


@CHAPTER.rule
def spectrum_degrades(tables: Tables, model: str, claim: Claim) -> Outcome:
    """Spectrum control lowers CoLA and STS-B by more than the margin, or prevents learning (a score no run defines, as
    the paper's NaN, counts as prevented: exact)."""
    if not any(m.startswith("spectrum") for m in _methods(tables, model, claim)):
        return not_in_this_edition("spectrum control")
    t = tables.read(model, claim.chapter, claim.table)
    cells = _calibration_cells(tables, model, claim, "score_mean", "score_std", runs="scored_runs")
    units = []
    for r in t[t["method"].str.startswith("spectrum") & t["task"].isin(DEGRADING_TASKS)].itertuples():
        name = f"{r.task}, {r.method}"
        if (r.task, r.method) in cells:
            units.append(unit(name, cells[(r.task, r.method)], claim.margin, "below", of="task × method cells"))
        elif int(r.scored_runs) == 0:  # no run learned a defined score
            units.append(
                unit(f"{name} (no run defined a score)", inference.exact(-100.0, "prevented learning"), claim.margin, "below", of="task × method cells")
            )
    if not units:
        return Outcome(NOT_RUN, f"no spectrum-control runs on {' or '.join(DEGRADING_TASKS)} with two seeds")
    return from_units(units, claim, 2, " points")


@CHAPTER.rule
def cosreg_flow_unchanged(tables: Tables, model: str, claim: Claim) -> Outcome:
    """CosReg and the flow leave the score about where it was: per method, the mean over tasks of its Welch difference
    from the uncalibrated runs, within the margin."""
    cells = _calibration_cells(tables, model, claim, "score_mean", "score_std", runs="scored_runs")
    units = []
    for method in ("cosreg", "flow"):
        diffs = [e for (_, m), e in cells.items() if m == method]
        if diffs:
            units.append(unit(method, inference.mean_of(diffs, "tasks of Welch differences"), claim.margin, "within", of="methods"))
    if not units:
        return not_in_this_edition("CosReg or flow")
    decided = from_units(units, claim, 2, " points")
    missing = [m for m in ("cosreg", "flow") if m not in {u.name for u in units}]
    return replace(decided, ours=f"{decided.ours}; not run here: {', '.join(missing)}") if missing else decided


@CHAPTER.rule
def spectrum_isotropic(tables: Tables, model: str, claim: Claim) -> Outcome:
    if not any(m.startswith("spectrum") for m in _methods(tables, model, claim)):
        return not_in_this_edition("spectrum control")
    cells = {k: e for k, e in _calibration_cells(tables, model, claim, "I1_mean", "I1_std").items() if k[1].startswith("spectrum")}
    if not cells:
        return Outcome(NOT_RUN, "no spectrum-control runs with two seeds")
    if inert := calibration_inert(tables.read(model, claim.chapter, claim.table), sorted({m for _, m in cells})):
        return inert
    return from_units([unit(f"{task}, {method}", e, claim.margin, of="task × method cells") for (task, method), e in cells.items()], claim, 4)


@CHAPTER.rule
def cosreg_leaves_isotropy(tables: Tables, model: str, claim: Claim) -> Outcome:
    if "cosreg" not in _methods(tables, model, claim):
        return not_in_this_edition("CosReg")
    cells = {k: e for k, e in _calibration_cells(tables, model, claim, "I1_mean", "I1_std").items() if k[1] == "cosreg"}
    if not cells:
        return Outcome(NOT_RUN, "no CosReg runs with two seeds")
    if inert := calibration_inert(tables.read(model, claim.chapter, claim.table), ["cosreg"]):
        return inert
    return from_units([unit(task, e, claim.margin, "within", of="tasks") for (task, _), e in cells.items()], claim, 4)


@CHAPTER.rule
def isotropy_costs_score(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    if not set(REGULARISERS) & set(t["method"]):
        return not_in_this_edition("regulariser on W (CosReg, spectrum control)")
    base = t[t["method"] == "none"].set_index("task")
    cells = t[t["method"] != "none"]
    d_i1 = cells["I1_mean"].to_numpy() - base.loc[cells["task"], "I1_mean"].to_numpy()
    d_score = cells["difference"].to_numpy()
    if len(cells) < 4 or np.ptp(d_i1) == 0:
        return Outcome(UNTESTABLE, "fewer than four calibrated cells with different isotropy changes")
    if inert := calibration_inert(t, sorted(set(cells["method"]))):
        return inert
    estimate = inference.spearman(d_i1, d_score, "task × method cells")
    return outcome(decide(estimate, claim.margin, "below"), f"rank correlation of the change in I1 (W) with the change in score: {estimate.text(2)}", estimate)


STEP_TIMES = CHAPTER.table("step_times", "method round seconds")
RUN_COLUMNS = (  # one fine-tuning run (a task, method and seed): its score, isotropy and losses
    "model spec task metric method seed steps score I1 I2 I1_context I2_context"
    " seconds_per_epoch final_task_loss final_calibration_loss penalty_start penalty_end"
)
RUNS = CHAPTER.table("runs", RUN_COLUMNS)
PRIOR_SCALE_RUNS = CHAPTER.table("prior_scale_runs", RUN_COLUMNS + " c1_scale")
OVERVIEW = CHAPTER.table(
    "overview",
    "source model method tasks mean_difference undefined_scores significantly_better significantly_worse I1_output I1_output_uncalibrated I1_W time_ratio",
)


def time_steps(spec: str, task: str, train_set: pd.DataFrame, methods: list[str], base: FinetuneConfig, device: str, dtype: str) -> pd.DataFrame:
    """Seconds per optimiser step of each method, in this process, warm, the methods interleaved on one batch
    (`finetune.step_times`): the cost the flow-cost claim is decided on, fair on a machine that runs other work too."""
    lm = load_model(spec, device=device, dtype=dtype)
    return STEP_TIMES.check(step_times(lm, task, train_set, [replace(base, method=m) for m in methods]))


def step_summary(times: pd.DataFrame) -> pd.DataFrame:
    """Per method: the median seconds per step of the interleaved rounds, and the median of its per-round ratios to the
    uncalibrated step."""
    wide = times.pivot(index="round", columns="method", values="seconds")[list(dict.fromkeys(times["method"]))]
    ratio = wide.div(wide["none"], axis=0).median() if "none" in wide else pd.Series(np.nan, index=wide.columns)
    return pd.DataFrame({"method": wide.columns, "median seconds per step": wide.median().to_numpy(), "× none (median of rounds)": ratio.to_numpy()})


@CHAPTER.rule
def flow_costly(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    if t is None or not {"flow", "none"} <= set(t["method"]):
        return Outcome(NOT_RUN, "no interleaved step times of the flow and the uncalibrated model")
    wide = t.pivot(index="round", columns="method", values="seconds")
    rounds = len(wide)
    estimate = inference.mean_t(np.log(wide["flow"] / wide["none"]), "interleaved rounds").back_transformed(
        "log", f"geometric mean over {rounds} interleaved rounds, t on the log ratio"
    )
    median = float((wide["flow"] / wide["none"]).median())
    text = f"{estimate.text(2, '×')} the uncalibrated time per optimiser step (median of the {rounds} rounds' ratios {median:.2f}×)"
    return outcome(decide(estimate, claim.margin), text, estimate)


def _worker_run(spec: str, task: str, train_set: pd.DataFrame, dev_set: pd.DataFrame, cfg: FinetuneConfig, device: str, dtype: str) -> tuple[dict, Path | None]:
    """cached_run on a worker, on the worker's own GPU where it has one."""
    return cached_run(spec, task, train_set, dev_set, cfg, workers.worker_device(device), dtype)


SMALL_TASKS = ("mrpc", "wnli")  # trained for `epochs_small` epochs (the paper: 5, for their small training sets)


@dataclass(frozen=True)
class Grid:
    """Chapter 13's fine-tuning grid: every (model, task, method, seed) run `run_grid` trains, from the pre-trained weights."""

    specs: list[str]
    splits: dict[str, tuple[pd.DataFrame, pd.DataFrame]]  # task → (training sample, development sample)
    methods: list[str]
    seeds: list[int]
    base: FinetuneConfig  # method "none"; each run sets its method, seed and epochs
    epochs: dict[str, int]  # by task


def grid_values(parameters: Mapping[str, Any]) -> tuple[list[str], list[str], FinetuneConfig]:
    """The tasks, methods and base configuration chapter 13's parameters give, each value checked (one clear line),
    without reading data: `grid` and the gpu edition's command (before it starts anything) call this."""
    tasks, methods = names(parameters["tasks"], "tasks", GLUE_TASKS), names(parameters["methods"], "methods", METHODS)
    for name in ("seeds", "n_train", "n_dev", "epochs", "epochs_small"):
        value = parameters[name]
        require(isinstance(value, int) and not isinstance(value, bool) and value > 0, f"parameter {name} must be a positive integer, got {value!r}")
    precision = autocast_precision(str(parameters["dtype"]), pick_device(str(parameters["device"])))
    return tasks, methods, config(FinetuneConfig, parameters, method="none", precision=precision)


def grid(specs: list[str], parameters: Mapping[str, Any]) -> Grid:
    """The grid from chapter 13's parameters (its cell's namespace, or the values a build plans for it), each checked:
    the chapter and `lib.edition.finetuning` (its runs ahead of it, a task per process) both call this."""
    tasks, methods, base = grid_values(parameters)
    seed = int(parameters["seed"])
    splits = {task: glue_samples(task, int(parameters["n_train"]), int(parameters["n_dev"]), seed=seed) for task in tasks}
    epochs = {t: int(parameters["epochs_small"] if t in SMALL_TASKS else parameters["epochs"]) for t in GLUE_TASKS}
    return Grid(specs, splits, methods, list(range(seed, seed + int(parameters["seeds"]))), base, epochs)


def run_grid(
    specs: list[str],
    splits: dict[str, tuple[pd.DataFrame, pd.DataFrame]],
    methods: list[str],
    seeds: list[int],
    base: FinetuneConfig,
    epochs: dict[str, int],
    device: str = "auto",
    dtype: str = "float32",
    client: Any | None = None,
) -> pd.DataFrame:
    """Every (model, task, method, seed) run, each from the pre-trained weights, as one table in grid order; a bar over
    the runs. With a client from `workers.pool` the runs execute side by side (local processes or Dask workers)."""
    grid = [(spec, task, method, s) for spec in specs for task in splits for method in methods for s in seeds]
    configs = [FinetuneConfig(**{**asdict(base), "method": method, "seed": s, "epochs": epochs[task]}) for _, task, method, s in grid]
    calls = [(spec, task, *splits[task], cfg, device, dtype) for (spec, task, _, _), cfg in zip(grid, configs)]
    results = workers.results(client, _worker_run, calls)
    rows = []
    bar = tqdm(zip(grid, results), total=len(grid), desc="fine-tuning runs", unit="run")
    for (_, task, method, s), (row, cached) in bar:
        rows.append(row)
        if cached:  # its time is not what the chapter costs, unless this build ran it (`runner`)
            record("reused", cached, f"fine-tuning run {row['model']} {task} {method} seed {s}")
        bar.write(
            f"{row['model']} {task} {method} seed {s}: {row['metric']} {row['score']:.2f}, I1 {row['I1']:.3f}, "
            f"{row['seconds_per_epoch']:.1f} s/epoch{' (cached)' if cached else ''}"
        )
    return pd.DataFrame(rows)


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (model, task, method): mean ± std of score, I1 and I2 over seeds; the difference from the uncalibrated runs
    (method none) of the same model and task, with the p-values of Welch's t-test (`p`, which `significant` uses) and
    of Student's (`p_student`, the paper's test); time per epoch relative to them."""
    rows = []
    for (model, task, method), group in runs.groupby(["model", "task", "method"], sort=False):
        reference = runs[(runs["model"] == model) & (runs["task"] == task) & (runs["method"] == "none")]
        has_reference = method != "none" and len(reference) > 0
        p = welch_p(group["score"], reference["score"]) if has_reference else float("nan")
        rows.append(
            {
                "model": model,
                "task": task,
                "metric": group["metric"].iloc[0],
                "method": method,
                "runs": len(group),
                "scored_runs": int(group["score"].notna().sum()),  # runs whose score is defined (the n of the score's mean and tests)
                "score_mean": group["score"].mean(),
                "score_std": group["score"].std(ddof=1),
                "difference": group["score"].mean() - reference["score"].mean() if has_reference else float("nan"),
                "p": p,
                "p_student": student_p(group["score"], reference["score"]) if has_reference else float("nan"),
                "significant": bool(p < 0.05),
                "I1_mean": group["I1"].mean(),
                "I1_std": group["I1"].std(ddof=1),
                "I2_mean": group["I2"].mean(),
                "I2_std": group["I2"].std(ddof=1),
                "I1_context_mean": group["I1_context"].mean() if "I1_context" in group else float("nan"),
                "I2_context_mean": group["I2_context"].mean() if "I2_context" in group else float("nan"),
                "time_ratio": group["seconds_per_epoch"].mean() / reference["seconds_per_epoch"].mean() if len(reference) else float("nan"),
                "penalty_removed": _penalty_removed(group),
            }
        )
    return pd.DataFrame(rows)


def method_overview(summary: pd.DataFrame) -> pd.DataFrame:
    """Per model and calibration method, over tasks: mean score change, tasks where the score is undefined (NaN),
    significant gains and drops (drops unknown where significance is), mean I1 of the output (contextual) embeddings
    against the uncalibrated mean, mean I1 of the token-embedding matrix W (where measured), time ratio."""
    rows = []
    for (model, method), group in summary[summary["method"] != "none"].groupby(["model", "method"], sort=False):
        marked = group["significant"].notna().all()
        significant = group["significant"].fillna(False).astype(bool)
        uncalibrated = summary[(summary["model"] == model) & (summary["method"] == "none")]
        rows.append(
            {
                "model": model,
                "method": method,
                "tasks": len(group),
                "mean_difference": group["difference"].mean(),
                "undefined_scores": int(group["score_mean"].isna().sum()),
                "significantly_better": int((significant & (group["difference"] > 0)).sum()),
                "significantly_worse": int((significant & (group["difference"] < 0)).sum()) if marked else None,
                "I1_output": group["I1_context_mean"].mean(),
                "I1_output_uncalibrated": uncalibrated["I1_context_mean"].mean(),
                "I1_W": group["I1_mean"].mean() if "I1_mean" in group else np.nan,
                "time_ratio": group["time_ratio"].mean(),
            }
        )
    return pd.DataFrame(rows)


def paper_summary() -> pd.DataFrame:
    """Ding et al.'s Table 1 (scores) joined with Table 4 (I1, I2) in the columns of `finetune.summarise`; Table 4 measures
    "the output embedding space", so its values fill the output (contextual) columns, and I1 of W is left out. The paper marks only
    significant improvements, so `significant` is True where marked and unknown (None) elsewhere; its only time
    ratio is the flow's average over tasks (§4.1), given to each of that model's flow rows."""
    scores = paper.table("ding2022", "glue")
    iso = paper.table("ding2022", "glue_isotropy")[["model", "paper_method", "paper_task", "paper_I1", "paper_I2"]]
    frame = scores.merge(iso, on=["model", "paper_method", "paper_task"], how="left")
    none = frame[frame["paper_method"] == "none"].set_index(["model", "paper_task"])["paper_value"]
    reference = none.reindex(pd.MultiIndex.from_frame(frame[["model", "paper_task"]])).to_numpy()
    calibrated = frame["paper_method"] != "none"
    timed = paper.values()["ding2022"]["flow_time_ratio"]
    time_ratio = np.where((frame["model"] == timed["model"]) & (frame["paper_method"] == "flow"), timed["value"], np.nan)
    return pd.DataFrame(
        {
            "model": frame["model"],
            "task": frame["paper_task"],
            "metric": frame["paper_metric"],
            "method": frame["paper_method"],
            "score_mean": frame["paper_value"],
            "score_std": frame["paper_std"],
            "difference": (frame["paper_value"] - reference).where(calibrated),
            "significant": frame["paper_significant"].map(lambda marked: True if marked else None).where(calibrated, False),
            "I1_context_mean": frame["paper_I1"],
            "I2_context_mean": frame["paper_I2"],
            "time_ratio": time_ratio,
        }
    )
