"""Chapter 13: isotropy calibration during fine-tuning (Ding et al. 2022): the grid of runs, its summary, tables,
figures and verdict rules."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from ..core import paper
from ..core.checks import positive_int, positive_numbers
from ..core.declaration import chapter
from ..core.profiles import config
from ..core.sources import names
from ..core.store import Writer
from ..datasets.tasks import GLUE_TASKS, glue_samples
from ..encode.models import load_model
from ..measure import inference, isotropy
from ..measure.inference import Estimate
from ..measure.metrics import student_p, welch_p
from ..provenance import record
from ..settings import autocast_precision, pick_device
from ..train import calibration, finetune, workers
from ..train.finetune import METHODS, FinetuneConfig, cached_run, step_times
from . import plotting
from .cells import plus_minus
from .plotting import COLORS
from .verdicts import FAILS, MIXED, NOT_RUN, UNTESTABLE, Claim, Outcome, Tables, decide, from_units, outcome, unit
from .wording import listed, signed, span

CHAPTER = chapter(
    "13_isotropy_calibration",
    allowed={
        "workers": 'cores, "" (no workers), local:N, or a Dask scheduler address (tcp://host:8786)',
        "methods": "comma-separated, any of: " + ", ".join(METHODS),
    },
)


EFFECTS = (  # the measures Fig. 13.1 shows as differences from the uncalibrated runs: (mean, std, runs that measured it, label)
    ("score_mean", "score_std", "scored_runs", "task score (points)"),
    ("I1_mean", "I1_std", "runs", "I1 of W"),
    ("I2_mean", "I2_std", "runs", "I2 of W"),
)


def method_color(method: str) -> str:
    """A calibration method's colour, the same in every figure (the uncalibrated runs would take the first)."""
    return COLORS[METHODS.index(method)]


def calibration_effects(summary: pd.DataFrame, methods: list[str]):
    """One model's calibrations against the uncalibrated runs, by task: the difference in task score and in I1 and I2 of
    W, each with its 95% Welch interval over seeds (`welch_cells`), and a zero line."""
    tasks = list(dict.fromkeys(summary["task"]))
    calibrated = [m for m in methods if m != "none"]
    fig, axes = plotting.grid(len(EFFECTS), columns=1, panel_height=2.3, sharex=True)
    for ax, (value, spread, runs, label) in zip(axes, EFFECTS):
        cells = welch_cells(summary, value, spread, runs)
        for i, method in enumerate(calibrated):
            found = [cells.get((task, method)) for task in tasks]
            estimate, low, high = ([getattr(e, k) if e else np.nan for e in found] for k in ("value", "low", "high"))
            x = np.arange(len(tasks)) + (i - (len(calibrated) - 1) / 2) * 0.1
            plotting.differences(ax, x, estimate, low, high, method, method_color(method), joined=False)  # tasks have no order
        ax.set(ylabel=f"{label}:\nminus uncalibrated")
    axes[-1].set(xticks=np.arange(len(tasks)), xticklabels=tasks, xlim=(-0.5, len(tasks) - 0.5))
    plotting.legend_above(fig, axes[0])
    return fig


def effects_text(summary: pd.DataFrame, methods: list[str]) -> str:
    """What Fig. 13.1 shows, in words: per calibration, the range of its score change over tasks, how many of its
    intervals clear zero, and the largest change in I1 and I2 of W."""
    parts = []
    for method in (m for m in methods if m != "none"):
        score = {t: e for (t, m), e in welch_cells(summary, *EFFECTS[0][:3]).items() if m == method}
        moved = [max((abs(e.value) for (_, m), e in welch_cells(summary, *measure[:3]).items() if m == method), default=np.nan) for measure in EFFECTS[1:]]
        if not score:
            parts.append(f"{method}: no task with two seeds on each side")
            continue
        values = [e.value for e in score.values()]
        clear = sum(e.low > 0 or e.high < 0 for e in score.values())
        parts.append(
            f"{method}: score {span(signed(min(values), 1), signed(max(values), 1))} points by task, {clear} of {len(score)} intervals clear of zero; "
            f"I1 of W moves by {_at_most(moved[0], 3)}, I2 by {_at_most(moved[1], 4)}"
        )
    return "; ".join(parts) + "."


def spectrum_targets(curves: dict[str, dict[str, np.ndarray]]):
    """Per model: the singular values of W (first curve) and the spectrum-control priors they are pulled towards (log-log)."""
    fig, axes = plotting.grid(len(curves), columns=2, panel_height=3.6)
    for (name, lines), ax in zip(curves.items(), axes):
        for (label, values), style in zip(lines.items(), ["-", "--", ":"]):
            ax.plot(np.arange(1, len(values) + 1), values, style, lw=2, label=label)
        ax.set(xscale="log", yscale="log", xlabel="index k", ylabel=r"singular value $\sigma_k$", title=f"{name}: W and the spectrum priors")
    plotting.legend_above(fig, axes[0])
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


def welch_cells(t: pd.DataFrame, value: str, spread: str, runs: str = "runs") -> dict[tuple[str, str], Estimate]:
    """Per (task, method) of one model's summary table, the Welch difference method − uncalibrated of one measured
    column over seeds (`runs`: the column counting the seeds that measured it; a score undefined in a run is not
    counted); cells with fewer than two such seeds on either side are left out."""
    base = t[t["method"] == "none"].set_index("task")
    cells = {}
    for r in t[t["method"] != "none"].itertuples():
        if r.task not in base.index:
            continue
        b = base.loc[r.task]
        n, n_base = int(getattr(r, runs)), int(b[runs])
        if n >= 2 and n_base >= 2:
            cells[(r.task, r.method)] = inference.welch(getattr(r, value), getattr(r, spread), n, b[value], b[spread], n_base, "seeds")
    return cells


def _calibration_cells(tables: Tables, model: str, claim: Claim, value: str, spread: str, runs: str = "runs") -> dict[tuple[str, str], Estimate]:
    """`welch_cells` of the claim's table for the model."""
    return welch_cells(tables.read(model, claim.chapter, claim.table), value, spread, runs)


def _at_most(value: float, digits: int) -> str:
    """ "at most 0.003", or "less than 0.001" where the value rounds to zero."""
    return f"at most {value:.{digits}f}" if round(value, digits) else f"less than {10**-digits:.{digits}f}"


def _with_interval(e: Estimate, digits: int = 2) -> str:
    """A signed difference and its interval ("-3.18 (-48.50 to +42.14)"); the value alone where the interval's ends
    print as the value does (the seeds agreed to the digits shown)."""
    value, low, high = (signed(v, digits) for v in (e.value, e.low, e.high))
    return value if low == high == value else f"{value} ({low} to {high})"


def findings(ours: pd.DataFrame, theirs: pd.DataFrame, runs: pd.DataFrame, lr: float, flow_layers: int, flow_hidden: int) -> list[str]:
    """The chapter's "what our run shows" bullets: each method's score, isotropy and time next to the paper's, what the
    flow costs, and how far a weight can move in our runs' steps."""
    lines = []
    for row in ours.itertuples():
        paper_rows = theirs[theirs["method"] == row.method]
        paper_text = "; ".join(
            f"{r.model} {signed(r.mean_difference, 2)}, I1 of the output {r.I1_output_uncalibrated:.2f} → {r.I1_output:.2f}" for r in paper_rows.itertuples()
        )
        lines.append(
            f"- **{row.method}** ({row.model}): score change {signed(row.mean_difference, 2)} points on average over {row.tasks} tasks "
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
    took = f"{steps.min()}" if steps.min() == steps.max() else f"{steps.min()}-{steps.max()}"
    lines.append(
        f"- Each of our runs took {took} optimiser steps; the paper's take thousands (about 6,300 for SST-2: 67k examples × 3 epochs "
        f"at batch 32). With Adam a weight moves by at most about the learning rate ({lr:g}) per step, so a regulariser on W could change "
        f"each entry by at most ~{lr * steps.max():.1e} here. A method whose I1 does not move in these steps may still move it over the "
        f"paper's thousands, and a score that does not change is no evidence about isotropy either way."
    )
    return lines


def answer(summary_frame: pd.DataFrame, runs: pd.DataFrame, step_times: dict[str, pd.DataFrame]) -> list[str]:
    """The chapter's answer: per calibration method, its change in task score and in I1 of W against the uncalibrated
    fine-tuning (Welch over seeds per task, averaged over tasks and models, 95% intervals), and what the flow costs per
    optimiser step."""
    methods = [m for m in dict.fromkeys(summary_frame["method"]) if m != "none"]
    score, i1 = {m: [] for m in methods}, {m: [] for m in methods}
    for _, frame in summary_frame.groupby("model", sort=False):
        for (_, m), e in welch_cells(frame, *EFFECTS[0][:3]).items():
            score[m].append(e)
        for (_, m), e in welch_cells(frame, *EFFECTS[1][:3]).items():
            i1[m].append(e)
    models = summary_frame["model"].nunique()
    over = f"{summary_frame['task'].nunique()} tasks" + (f" and {models} models" if models > 1 else "")
    per_cell = runs.groupby(["model", "task", "method"]).size()
    seeds = span(str(per_cell.min()), str(per_cell.max()))
    steps = span(str(runs["steps"].min()), str(runs["steps"].max()))
    tested = {m: inference.mean_of(es, "tasks") for m, es in score.items() if es}
    if not tested:
        return [f"This run cannot tell: with {seeds} seed{'s' if seeds != '1' else ''} per task and method there is no spread to test a change against."]
    better, worse = [m for m, e in tested.items() if e.low > 0], [m for m, e in tested.items() if e.high < 0]
    lead = f"{listed(better)} {'raises' if len(better) == 1 else 'raise'} the task score measurably" if better else "No calibration raises the task score"
    lead += f", and {listed(worse)} {'lowers' if len(worse) == 1 else 'lower'} it measurably" if worse else " measurably" if not better else ""
    if len(tested) == 1:
        method, e = next(iter(tested.items()))
        change = f"by {_with_interval(e)} points with {method} (95% interval, Welch over {seeds} seeds per task)"
    else:
        low, high = min(tested, key=lambda m: tested[m].value), max(tested, key=lambda m: tested[m].value)
        clear = [m for m, e in tested.items() if e.low > 0 or e.high < 0]
        change = (
            f"by {signed(tested[low].value, 2)} points ({low}) to {signed(tested[high].value, 2)} ({high}); "
            + (f"the 95% intervals of {listed(clear)} exclude zero" if clear else "every 95% interval includes zero")
            + f" (Welch over {seeds} seeds per task)"
        )
    sentences = [f"{lead}: averaged over {over}, the score changes against uncalibrated fine-tuning {change}."]
    moved = {m: inference.mean_of(es, "tasks") for m, es in i1.items() if es}
    if moved:
        most = max(moved, key=lambda m: abs(moved[m].value))
        if not round(max(abs(e.low) + abs(e.high) for e in moved.values()), 3):
            change = "changes by less than 0.001" + (f" with {most}" if len(moved) == 1 else " with every method")
        else:
            change = f"changes by {_with_interval(moved[most], 3)}" + (f" with {most}" if len(moved) == 1 else f" at most ({most})")
        sentences.append(f"In runs of {steps} optimiser steps (the paper's take thousands), I1 of the token-embedding matrix {change}.")
    costs = {name: found for name, t in step_times.items() if (found := flow_cost(t))}
    if costs:
        timed = paper.values()["ding2022"]["flow_time_ratio"]
        each = "; ".join(
            f"{e.value:.2f}× (95% interval {e.low:.2f} to {e.high:.2f}{f', {name}' if len(costs) > 1 else ''})" for name, (e, _, _) in costs.items()
        )
        sentences.append(f"The flow costs {each} the uncalibrated optimiser step, against {timed['value']:.1f}× per epoch in the paper.")
    return sentences


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


def time_steps(
    spec: str, task: str, train_set: pd.DataFrame, methods: list[str], base: FinetuneConfig, device: str, dtype: str, rounds: int
) -> tuple[str, pd.DataFrame]:
    """The model's name and the seconds per optimiser step of each method, in this process, warm, the methods
    interleaved on one batch in `rounds` rounds (`finetune.step_times`): the cost the flow-cost claim is decided on, fair
    on a machine that runs other work too."""
    lm = load_model(spec, device=device, dtype=dtype)
    return lm.name, STEP_TIMES.check(step_times(lm, task, train_set, [replace(base, method=m) for m in methods], rounds=rounds))


def step_summary(times: pd.DataFrame) -> pd.DataFrame:
    """Per method: the median seconds per step of the interleaved rounds, and the median of its per-round ratios to the
    uncalibrated step."""
    wide = times.pivot(index="round", columns="method", values="seconds")[list(dict.fromkeys(times["method"]))]
    ratio = wide.div(wide["none"], axis=0).median() if "none" in wide else pd.Series(np.nan, index=wide.columns)
    return pd.DataFrame({"method": wide.columns, "median seconds per step": wide.median().to_numpy(), "× none (median of rounds)": ratio.to_numpy()})


def flow_cost(t: pd.DataFrame | None) -> tuple[Estimate, float, int] | None:
    """From a step_times table: the flow's time per optimiser step over the uncalibrated one (geometric mean over the
    interleaved rounds, t-interval on the log ratio), the median of the rounds' ratios, and the number of rounds; None
    without both methods."""
    if t is None or not {"flow", "none"} <= set(t["method"]):
        return None
    wide = t.pivot(index="round", columns="method", values="seconds")
    rounds = len(wide)
    estimate = inference.mean_t(np.log(wide["flow"] / wide["none"]), "interleaved rounds").back_transformed(
        "log", f"geometric mean over {rounds} interleaved rounds, t on the log ratio"
    )
    return estimate, float((wide["flow"] / wide["none"]).median()), rounds


@CHAPTER.rule
def flow_costly(tables: Tables, model: str, claim: Claim) -> Outcome:
    found = flow_cost(tables.read(model, claim.chapter, claim.table))
    if found is None:
        return Outcome(NOT_RUN, "no interleaved step times of the flow and the uncalibrated model")
    estimate, median, rounds = found
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
        positive_int(name, parameters[name])
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
    say: bool = True,
) -> pd.DataFrame:
    """Every (model, task, method, seed) run, each from the pre-trained weights, as one table in grid order; a bar over
    the runs, then one line on how many were trained and reused (`say`; their count is the table's `attrs["reused"]`).
    With a client from `workers.pool` the runs execute side by side (local processes or Dask workers)."""
    grid = [(spec, task, method, s) for spec in specs for task in splits for method in methods for s in seeds]
    configs = [FinetuneConfig(**{**asdict(base), "method": method, "seed": s, "epochs": epochs[task]}) for _, task, method, s in grid]
    calls = [(spec, task, *splits[task], cfg, device, dtype) for (spec, task, _, _), cfg in zip(grid, configs)]
    results = workers.results(client, _worker_run, calls)
    rows, reused = [], 0
    for (_, task, method, s), (row, cached) in tqdm(zip(grid, results), total=len(grid), desc="fine-tuning runs", unit="run"):
        rows.append(row)
        if cached:  # its time is not what the chapter costs, unless this build ran it (`runner`)
            record("reused", cached, f"fine-tuning run {row['model']} {task} {method} seed {s}")
            reused += 1
    if say:
        print(ran_line(f"{len(rows)} fine-tuning runs", len(rows), reused))
    frame = pd.DataFrame(rows)
    frame.attrs["reused"] = reused
    return frame


def ran_line(what: str, runs: int, reused: int) -> str:
    return f"{what}: {runs - reused} trained here, {reused} reused from the cache (each run's score and time: the runs table)"


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


@dataclass(frozen=True)
class Setup:
    grid: Grid  # the fine-tuning runs: models × tasks × methods × seeds
    scales: list[float]  # c1/σ1 of the prior-scale runs (none: the section is skipped)
    sweep_task: str  # the task they fine-tune
    step_rounds: int  # interleaved rounds of the step-time measurement


def inputs(specs: list[str], parameters: Mapping[str, Any]) -> Setup:
    """The chapter's runs from its parameters (the cell's namespace), every value checked first."""
    scales = positive_numbers("spectrum_scales", parameters["spectrum_scales"])
    sweep_task = names(parameters["scale_task"], "scale_task", GLUE_TASKS)[0]
    return Setup(grid(specs, parameters), scales, sweep_task, positive_int("step_rounds", parameters["step_rounds"]))


def samples_table(setup: Setup) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"task": GLUE_TASKS[t][0], "metric": GLUE_TASKS[t][1], "train": len(tr), "dev": len(dv), "epochs": setup.grid.epochs[t]}
            for t, (tr, dv) in setup.grid.splits.items()
        ]
    )


def run(setup: Setup, *, workers_spec: str, results: Writer, parameters: dict, device: str = "auto", dtype: str = "auto") -> pd.DataFrame:
    """Every fine-tuning run of the grid, side by side in one pool of workers (runs a parallel build trained ahead come
    from the cache), and each model's runs written. One call for all models, unlike other chapters' per-model `run`:
    a pool per model would leave its processes idle while the last runs of a model finish."""
    g = setup.grid
    with workers.pool(workers_spec) as client:  # "cores" (the default): one process per free CPU core
        runs = run_grid(g.specs, g.splits, methods=g.methods, seeds=g.seeds, base=g.base, epochs=g.epochs, device=device, dtype=dtype, client=client)
    for spec in g.specs:
        of_model = runs[runs["spec"] == spec]
        results.table(of_model, RUNS, spec, parameters=parameters, model_info={"name": of_model["model"].iloc[0]})
    return runs


def summary(runs: pd.DataFrame, results: Writer, parameters: dict) -> pd.DataFrame:
    """Per model, task and method over seeds (`summarise`), each model's written."""
    for spec, of_model in runs.groupby("spec", sort=False):
        results.table(summarise(of_model), CALIBRATION_SUMMARY, spec, parameters=parameters)
    return summarise(runs)


WORDS = {  # the tables' columns as the page prints them
    "scored_runs": "runs with a score",
    "p": "p (Welch)",
    "p_student": "p (Student)",
    "significant": "Welch p < 0.05",
    "I1_of_W": "I1 of W",
    "I2_of_W": "I2 of W",
    "I1_context_mean": "I1 of the output",
    "I2_context_mean": "I2 of the output",
    "time_ratio": "time per epoch (× uncalibrated)",
    "mean_difference": "mean difference",
    "I1_output": "I1 of the output",
    "I1_output_uncalibrated": "uncalibrated",
    "I1_W": "I1 of W",
    "c1_scale": "c1 / σ1",
    "score_mean": "score (mean)",
    "score_std": "score (std)",
    "paper_method": "method",
}


def score_tables(summary_frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per model: the dev score (mean ± std over seeds), its difference from no calibration and the tests."""
    return {
        model: frame.assign(score=plus_minus(frame["score_mean"], frame["score_std"]))[
            ["task", "metric", "method", "runs", "scored_runs", "score", "difference", "p", "p_student", "significant"]
        ].rename(columns=WORDS)
        for model, frame in summary_frame.groupby("model", sort=False)
    }


def isotropy_tables(summary_frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per model: I1 and I2 of W (mean ± std), of the output embeddings, and the time per epoch against no calibration."""
    return {
        model: frame.assign(I1_of_W=plus_minus(frame["I1_mean"], frame["I1_std"], 3), I2_of_W=plus_minus(frame["I2_mean"], frame["I2_std"], 3))[
            ["task", "method", "I1_of_W", "I2_of_W", "I1_context_mean", "I2_context_mean", "time_ratio"]
        ].rename(columns=WORDS)
        for model, frame in summary_frame.groupby("model", sort=False)
    }


def measure_step_times(setup: Setup, results: Writer, parameters: dict, device: str = "auto", dtype: str = "auto") -> dict[str, pd.DataFrame]:
    """Per model (by its name): every method's optimiser step timed on one batch of the first task, warm, in interleaved
    rounds (written)."""
    g, out = setup.grid, {}
    task = list(g.splits)[0]
    for spec in g.specs:
        name, out_of_model = time_steps(spec, task, g.splits[task][0], g.methods, g.base, device, dtype, setup.step_rounds)
        results.table(out_of_model, STEP_TIMES, spec, parameters=parameters, model_info={"name": name})
        out[name] = out_of_model
    return out


def step_tables(times: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Per model: the median seconds per step of each method and its multiple of the uncalibrated step."""
    return {name: step_summary(t).rename(columns={"× none (median of rounds)": "× uncalibrated (median of rounds)"}) for name, t in times.items()}


def multiple_tests_note(summary_frame: pd.DataFrame, seeds: int) -> str:
    """How many of the summary's t-tests fall below 0.05, how many chance alone would put there, and after Bonferroni."""
    tested = summary_frame.dropna(subset=["p"])
    if not len(tested):
        return "**Many tests at once.** No cell has a t-test in this run (it needs two seeds per side with some spread)."
    bonferroni = 0.05 / len(tested)
    return (
        f"**Many tests at once.** The table holds {len(tested)} t-tests; {int((tested['p'] < 0.05).sum())} have Welch's p < 0.05 "
        f"({int((tested['p_student'] < 0.05).sum())} with Student's). If no method changed anything, about {0.05 * len(tested):.1f} of "
        f"{len(tested)} would fall below 0.05 by chance alone. Holding the family of tests to 5% (Bonferroni: p < 0.05 / {len(tested)} "
        f"= {bonferroni:.4f}) leaves {int((tested['p'] < bonferroni).sum())} (Welch) and {int((tested['p_student'] < bonferroni).sum())} "
        f"(Student). With {seeds} seeds per cell a t-test has little power, so a change that is not significant is not shown to be absent."
    )


def figures_summary(summary_frame: pd.DataFrame, setup: Setup, results: Writer) -> None:
    """Fig. 13.1, one per model (in its tab): the calibrations' effects against the uncalibrated runs (`calibration_effects`)."""
    for model, frame in summary_frame.groupby("model", sort=False):
        caption = (
            f"{model}: each calibration minus the uncalibrated fine-tuning, by task: task score, and I1 and I2 of the token-embedding matrix W "
            "(bars: 95% intervals over seeds; the horizontal line at zero: no difference)."
        )
        fig = calibration_effects(frame, setup.grid.methods)
        results.figure(fig, f"calibration_{model}", caption, tab=model, alt=effects_text(frame, setup.grid.methods))


def _cell(value: float, std: float, significant: bool) -> str:
    return ("NaN" if pd.isna(value) else f"{value:.2f}") + " ± " + ("–" if pd.isna(std) else f"{std:.2f}") + (" *" if significant else "")


def paper_glue_table() -> pd.DataFrame:
    """Ding et al.'s Table 1: GLUE dev scores (mean ± std over 3 runs, * where significant), one column per task."""
    glue = paper.table("ding2022", "glue")
    cells = [_cell(v, s, m) for v, s, m in zip(glue["paper_value"], glue["paper_std"], glue["paper_significant"])]
    wide = glue.assign(cell=cells).pivot_table(index=["model", "paper_method"], columns="paper_task", values="cell", aggfunc="first", sort=False)
    return wide.reset_index().rename(columns=WORDS)


def paper_isotropy_table() -> pd.DataFrame:
    """Ding et al.'s Table 4: I1 after fine-tuning, one column per task."""
    iso = paper.table("ding2022", "glue_isotropy")
    wide = iso.pivot_table(index=["model", "paper_method"], columns="paper_task", values="paper_I1", aggfunc="first", sort=False)
    return wide.reset_index().rename(columns=WORDS)


def measured_space_note(summary_frame: pd.DataFrame) -> str:
    """How many of the paper's (I1, I2) pairs are impossible together, and our I1 of W and of the output embeddings."""
    iso = paper.table("ding2022", "glue_isotropy")
    lowest = iso["paper_I1"] - 0.005  # the smallest value that prints as the paper's two decimals
    impossible = iso[iso["paper_I2"] > (1 - lowest) / (1 + lowest)]
    spaces = summary_frame.groupby("method")[["I1_mean", "I1_context_mean"]].mean()
    at = iso.loc[iso["paper_I1"] == 0.91, "paper_I2"]
    return (
        f"- In Ding et al.'s Table 4, {len(impossible)} of {len(iso)} (I1, I2) pairs have I2 above that bound, even allowing for the "
        "rounding of the printed I1 (for I1 = 0.91 the "
        f"largest possible I2 is {(1 - 0.91) / (1 + 0.91):.3f}; beside I1 = 0.91 the table prints I2 from {at.min():.2f} to {at.max():.2f}), "
        "so at least one of the two columns is not what Appendix A defines.\n"
        + "\n".join(
            f"- Ours, {method}: I1 of the token-embedding matrix {r.I1_mean:.3f}, of the development embeddings {r.I1_context_mean:.3f}."
            for method, r in spaces.iterrows()
        )
    )


@dataclass(frozen=True)
class Overview:
    ours: pd.DataFrame  # each method averaged over the tasks (`method_overview` of our summary)
    theirs: pd.DataFrame  # the same of the paper's Tables 1 and 4
    table: pd.DataFrame  # both, with their source: the OVERVIEW table


def overview(summary_frame: pd.DataFrame, setup: Setup, results: Writer, parameters: dict) -> Overview:
    """Every method averaged over the tasks, ours beside the paper's (written for each model)."""
    ours, theirs = method_overview(summary_frame), method_overview(paper_summary())
    both = pd.concat([ours.assign(source="ours"), theirs.assign(source="paper")], ignore_index=True)
    both = both[["source"] + [c for c in both.columns if c != "source"]]
    for spec in setup.grid.specs:
        results.table(both, OVERVIEW, spec, parameters=parameters)
    return Overview(ours, theirs, both)


OVERVIEW_KEYS = ["source", "model", "method", "tasks"]


def scores_overview(ov: Overview) -> pd.DataFrame:
    return ov.table[OVERVIEW_KEYS + ["mean_difference", "undefined_scores", "significantly_better", "significantly_worse"]].rename(columns=WORDS)


def isotropy_overview(ov: Overview) -> pd.DataFrame:
    return ov.table[OVERVIEW_KEYS + ["I1_output", "I1_output_uncalibrated", "I1_W", "time_ratio"]].rename(columns=WORDS)


def _w(spec: str, device: str, dtype: str):
    lm = load_model(spec, device=device, dtype=dtype)
    return lm.name, lm.model.get_input_embeddings().weight.detach().double().cpu()


def spectrum_priors(setup: Setup, summary_frame: pd.DataFrame, results: Writer, device: str = "auto", dtype: str = "auto") -> str:
    """The singular values of each pre-trained W beside the spectrum priors (a figure), and per model and method how far
    the prior lies from W, how steeply each falls, and how I1 moved in this run; a note when no spectrum method runs."""
    methods = [m for m in setup.grid.methods if m.startswith("spectrum")]
    if not methods:
        return f"This edition runs no spectrum control (only {' and '.join(setup.grid.methods)}), so there is no figure here; the gpu edition shows it."
    curves, lines = {}, []
    for spec in setup.grid.specs:
        name, w = _w(spec, device, dtype)
        sigma = calibration.singular_values(w)
        curves[name] = {"W (pre-trained)": sigma.numpy()}
        alignment = isotropy.top_direction_alignment(w.numpy())
        of_model = summary_frame[summary_frame["model"] == name].groupby("method")["I1_mean"].mean()
        for method in methods:
            prior = finetune.spectrum_target(w, replace(setup.grid.base, method=method))
            curves[name][f"{method} prior"] = prior.numpy()
            lines.append(
                f"- {name}, **{method}**: prior at relative distance {float((sigma - prior).norm() / sigma.norm()):.2f} from W's singular "
                f"values; σ1/σ_d {float(prior[0] / prior[-1]):.1f} for the prior against {float(sigma[0] / sigma[-1]):.1f} for W "
                f"(top singular direction vs mean row: |cos| {alignment:.2f}); "
                f"I1 after fine-tuning {of_model.get(method, float('nan')):.3f} (uncalibrated {of_model.get('none', float('nan')):.3f})."
            )
    caption = "Singular values of the pre-trained W beside the spectrum priors with this chapter's constants."
    alt = "How steeply each curve falls, σ1/σ_d: " + "; ".join(
        f"{name}: " + ", ".join(f"{label} {values[0] / values[-1]:.1f}" for label, values in lines_of.items()) for name, lines_of in curves.items()
    )
    results.figure(spectrum_targets(curves), "spectrum_priors", caption, alt=alt + ".")
    return "\n".join(lines)


def prior_targets(setup: Setup, device: str = "auto", dtype: str = "auto") -> pd.DataFrame:
    """W moved onto the exponential prior at each scale c1/σ1, without training: its I1, I2 and norm against W's."""
    rows = []
    for spec in setup.grid.specs if setup.scales else []:
        name, w = _w(spec, device, dtype)
        norm = float(w.norm())
        for scale in setup.scales:
            cfg = replace(setup.grid.base, method="spectrum-exp", spectrum_scale=scale)
            prior = finetune.spectrum_target(w, cfg)
            rows.append({"model": name, "c1 / σ1": scale, **finetune.prior_measures(w, cfg), "‖prior‖ / ‖W‖": float(prior.norm()) / norm})
        rows.append({"model": name, "c1 / σ1": float("nan"), **isotropy.partition_measures(w.numpy()), "‖prior‖ / ‖W‖": 1.0})
    return pd.DataFrame(rows) if rows else pd.DataFrame({"result": ["this edition runs no prior-scale sweep"]})


def prior_scale_sweep(
    setup: Setup, *, n_train: int, n_dev: int, seed: int, workers_spec: str, results: Writer, parameters: dict, device: str = "auto", dtype: str = "auto"
) -> pd.DataFrame:
    """The sweep task fine-tuned from W set to the prior at each scale (spectrum control holding it there), and from the
    pre-trained W without calibration, with the grid's seeds (written for each model); empty without scales."""
    g = setup.grid
    if not setup.scales:
        return pd.DataFrame()
    task = setup.sweep_task
    split = {task: g.splits[task] if task in g.splits else glue_samples(task, n_train, n_dev, seed=seed)}
    at_prior = [replace(g.base, spectrum_scale=s, start_at_prior=True) for s in setup.scales]
    with workers.pool(workers_spec) as client:
        run = functools.partial(run_grid, g.specs, split, seeds=g.seeds, epochs=g.epochs, device=device, dtype=dtype, client=client, say=False)
        parts = [run(["spectrum-exp"], base=c).assign(c1_scale=c.spectrum_scale) for c in at_prior]
        parts.append(run(["none"], base=g.base).assign(c1_scale=float("nan")))
    sweep = pd.concat(parts)
    print(ran_line(f"{len(sweep)} runs of the prior-scale sweep", len(sweep), sum(p.attrs["reused"] for p in parts)))
    for spec in g.specs:
        of_model = sweep[sweep["spec"] == spec]
        results.table(of_model, PRIOR_SCALE_RUNS, spec, parameters=parameters, model_info={"name": of_model["model"].iloc[0]})
    return sweep


def _sweep_means(sweep: pd.DataFrame) -> pd.DataFrame:
    """Per model and scale: runs, score (mean, std), I1 of W and of the output embeddings after fine-tuning."""
    agg = dict(runs=("score", "size"), score_mean=("score", "mean"), score_std=("score", "std"), I1_W=("I1", "mean"), I1_output=("I1_context", "mean"))
    return sweep.groupby(["model", "task", "c1_scale"], dropna=False).agg(**agg).reset_index()


def sweep_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """`_sweep_means` as the page prints it."""
    return _sweep_means(sweep).rename(columns=WORDS) if len(sweep) else pd.DataFrame({"result": ["this edition runs no prior-scale sweep"]})


def sweep_lines(sweep: pd.DataFrame, task: str) -> str:
    """Per model: I1 of W and the score at the smallest scale against uncalibrated, with Welch's test over seeds."""
    if sweep.empty:
        return ""
    name, lines = GLUE_TASKS[task][0], []
    for model, rows in _sweep_means(sweep).groupby("model", sort=False):
        reference, smallest = rows[rows["c1_scale"].isna()].iloc[0], rows.loc[rows["c1_scale"].idxmin()]
        of_model = sweep[sweep["model"] == model]
        p = welch_p(of_model.loc[of_model["c1_scale"] == smallest["c1_scale"], "score"], of_model.loc[of_model["c1_scale"].isna(), "score"])
        lines.append(
            f"{model}, {name}: I1 of W after fine-tuning is {smallest['I1_W']:.3f} at c1/σ1 = {smallest['c1_scale']:g} against "
            f"{reference['I1_W']:.3f} uncalibrated, and the {GLUE_TASKS[task][1]} is {smallest['score_mean']:.1f} ± {smallest['score_std']:.1f} "
            f"against {reference['score_mean']:.1f} ± {reference['score_std']:.1f} (mean ± sd over {int(reference['runs'])} seeds; "
            + (f"Welch p = {p:.3f})." if p == p else "no Welch test: it needs two seeds per side with some spread).")
        )
    return "\n\n".join(lines)


def significant_cells(summary_frame: pd.DataFrame) -> pd.DataFrame:
    """Exercise ex-13-read: the cells with p < 0.05 under Welch's or Student's test."""
    tested = summary_frame.dropna(subset=["p"])
    cells = tested[(tested["p"] < 0.05) | (tested["p_student"] < 0.05)]
    return (
        cells[["model", "task", "method", "difference", "p", "p_student"]].rename(columns=WORDS)
        if len(cells)
        else pd.DataFrame({"result": ["no cell has p < 0.05 under either test"]})
    )


def chance_note(summary_frame: pd.DataFrame) -> str:
    """Exercise ex-13-read in words: how many cells each test finds, whether they agree, and how many chance would give."""
    tested = summary_frame.dropna(subset=["p"])
    welch, student = set(tested.index[tested["p"] < 0.05]), set(tested.index[tested["p_student"] < 0.05])
    agree = "the two tests agree on every cell" if welch == student else f"they agree on {len(welch & student)} and differ on {len(welch ^ student)}"
    return (
        f"In this run {len(welch)} of {len(tested)} cells have p < 0.05 under Welch's test and {len(student)} under Student's: {agree}. "
        f"{len(tested)} tests at the 5% level would give about {0.05 * len(tested):.1f} such cells by chance alone, so a count near that is no "
        "evidence that any method made a difference; a cell would need to survive a correction for the many tests. The two tests differ "
        "only in whether the two groups' variances are pooled; with equal group sizes their t statistics are equal and only the degrees "
        "of freedom differ, so they disagree only near the threshold."
    )


def adam_bound_note(runs: pd.DataFrame, summary_frame: pd.DataFrame, lr: float) -> str:
    """Exercise ex-13-strength: how far Adam lets W move in this run's steps, against I1 with and without spectrum control."""
    steps_max = int(runs["steps"].max())
    i1 = summary_frame.groupby("method")["I1_mean"].mean()
    return (
        f"In this run I1 of W is {i1.get('none', float('nan')):.3f} uncalibrated and "
        + ", ".join(f"{i1[m]:.3f} with {m}" for m in i1.index if m.startswith("spectrum"))
        + f". Adam divides each gradient by its running scale, so a weight moves by about the learning rate ({lr:g}) per step however "
        f"large the penalty's weight: after {steps_max} steps no entry of W has moved by more than about {lr * steps_max:.1e}. A stronger "
        "penalty changes the direction of the updates (more of each step goes to the spectrum), not their size, so I1 can move only as far "
        "as those steps allow. The prior-scale section above shows what the paper's I1 ≈ 1 takes: W shrunk to a small fraction of its norm, "
        "which at this rate needs far more steps than a few dozen."
    )
