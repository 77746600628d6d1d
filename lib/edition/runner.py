"""Execute the chapter sources with papermill under a parameter profile, for the book build.

    python -m lib.edition.runner --profile quick [--chapters 01_anisotropy,02_outlier_neurons] [-p NAME VALUE ...]

The default edition is what the chapters' `parameters` cells say; a profile (`lib.core.profiles`) lists only the values
it changes. Every value, from a profile or from `-p`, is checked against the chapters' cells (known name, same type as
the cell's value) before anything runs.

Each profile has its own edition (`lib.edition.folders`: `_build/<profile>/…`). A chapter whose source, imported lib code,
parameters, packages, data and model files are unchanged since its last run is reused (`lib.edition.cache`); the others
are converted from `notebooks/<chapter>.py` (jupytext percent format), executed with their parameters, and written to
`_build/<profile>/notebooks/<chapter>.ipynb` only when they ran without error, then their cache entry. An interrupted
run therefore resumes with the chapters still to do. A failing chapter is kept in `notebooks/failed/` for
inspection, and the command prints one line and exits with status 2. `--force` executes every chapter named.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jupytext
import papermill
import torch

from .. import provenance
from ..core.profiles import command_line_values, plan
from ..core.sources import chapters, comma_list, declared_parameters, source_file
from ..errors import BookError, cli, require
from ..io import sha256, write_atomic
from ..processes import die_with_parent, pid_file_holder, write_pid_file
from ..settings import CHAPTER, REPO_ROOT, RUNNING, STAGING, cpu_share, results_dir, thread_env
from . import cache, costs, features, finetuning, pretraining
from .commit import commit, now
from .folders import Edition

MAX_JOBS = 4  # the most chapters default_jobs runs at once
AHEAD = {m.CHAPTER: m.ahead for m in (pretraining, features, finetuning)}  # chapter → its long work, as commands run before it
BUILD_STARTED = "BOOK_BUILD_STARTED"  # set by a build: work cached since then is this build's, not earlier work
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def with_dependents(profile: str, plans: list[tuple[str, dict[str, Any]]], overrides: dict[str, Any], scale: float = 1.0) -> list[tuple[str, dict[str, Any]]]:
    """The plans and every other chapter run before in this edition that reads the results of a planned one, directly or
    through another (`cache.prerequisites`): left out, its page would go on showing what it read before. A dependent
    gets the profile's values and the overrides it declares; all in dependency order (each after the chapters it reads)."""
    edition, planned = Edition(profile), dict(plans)
    others = [c for c in chapters() if c not in planned and edition.entry(c).is_file()]
    grew = True
    while grew:
        grew = False
        for chapter in (c for c in others if c not in planned):
            own = {k: v for k, v in overrides.items() if k in declared_parameters(chapter)}
            parameters = plan(profile, [chapter], own, scale)[0][1]
            if cache.prerequisites(chapter, parameters) & set(planned):
                planned[chapter], grew = parameters, True
    needs = {name: cache.prerequisites(name, parameters) & set(planned) for name, parameters in planned.items()}
    ordered: list[tuple[str, dict[str, Any]]] = []
    left = list(planned.items())
    while left:  # each chapter after those it reads, else in the order given (a cycle keeps it)
        done = {name for name, _ in ordered}
        ready = next((item for item in left if needs[item[0]] <= done), left[0])
        ordered.append(ready)
        left.remove(ready)
    return ordered


def _publish_results(staged: Path, profile: str, chapter: str, outputs: list[str]) -> None:
    """Replace every result folder of the chapter in this edition (one per model, and its figures) by the files the run
    recorded writing (`outputs`: paths under the results folder) and nothing else: afterwards the edition holds exactly
    this run's recorded results for the chapter; anything else in its folder is discarded with it."""
    final = results_dir()
    for old in (final / profile).glob(f"*/{chapter}"):
        if old.is_dir():
            shutil.rmtree(old)
    for label in sorted(set(outputs)):
        target = final / label
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged / label, target)


def _threads() -> int:
    """The CPU threads a chapter's kernel computes with (its environment's, else torch's)."""
    return int(os.environ.get("OMP_NUM_THREADS") or torch.get_num_threads())


def pid_file(edition: Edition, chapter: str) -> Path:
    """Names the process executing a chapter while it runs (`running/<chapter>.pid`)."""
    return edition.root / "running" / f"{chapter}.pid"


def _claim(edition: Edition, chapter: str) -> None:
    """Take the chapter's running folders for this process; a process of an earlier build that still executes it (its
    runner was killed) stops this one with a line naming it, instead of having its folders deleted under it. A pid file
    whose process has ended, or whose id now names an unrelated process, is a leftover: it is replaced."""
    file = pid_file(edition, chapter)
    holder = pid_file_holder(file)
    if holder is not None and holder[0] != os.getpid():
        raise BookError(
            f"chapter {chapter} is still being executed by process {holder[0]}, left by a build that was stopped; "
            f"wait for it to end or stop it (kill {holder[0]}), then run again"
        )
    write_pid_file(file, _threads())  # the cores it holds (`settings.free_cores`)


def run_chapter(chapter: str, parameters: dict[str, Any], edition: Edition, parts: dict[str, Any], guard: Callable[[], None] | None = None) -> cache.Entry:
    """Execute one chapter; its tables and figures go to a fresh folder of its own. On success the files it recorded
    replace the chapter's results, then its executed notebook and its cache entry (with the key made of parts) replace
    the old ones; a run that fails or is killed leaves the edition's results and entry as they were. `guard` is called
    before anything is published (a worker checks there that its runner still holds the edition)."""
    _claim(edition, chapter)
    try:
        return _execute_notebook(chapter, parameters, edition, parts, guard)
    finally:
        pid_file(edition, chapter).unlink(missing_ok=True)


def _execute_notebook(chapter: str, parameters: dict[str, Any], edition: Edition, parts: dict[str, Any], guard: Callable[[], None] | None) -> cache.Entry:
    notebook = jupytext.read(source_file(chapter))
    notebook.metadata["kernelspec"] = KERNEL
    edition.notebooks.mkdir(parents=True, exist_ok=True)
    staged, scratch = edition.running(chapter), edition.root / "tmp"
    shutil.rmtree(staged, ignore_errors=True)  # what a killed run of this chapter left
    for leftover in scratch.glob(f"{chapter}-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    scratch.mkdir(parents=True, exist_ok=True)
    started, start = now(), time.time()
    with tempfile.TemporaryDirectory(prefix=f"{chapter}-", dir=scratch) as tmp:
        executed_in, executed_out, log = Path(tmp) / "input.ipynb", Path(tmp) / f"{chapter}.ipynb", Path(tmp) / "provenance.jsonl"
        jupytext.write(notebook, executed_in)
        os.environ[provenance.ENV] = str(log)  # the kernel inherits it: lib records what the chapter reads and writes
        os.environ[STAGING] = str(staged)  # and this: the chapter writes its results there (`settings.output_dir`)
        os.environ[RUNNING], os.environ[CHAPTER] = str(pid_file(edition, chapter).parent), chapter  # `settings.free_cores`
        # and this: matplotlib writes it as the figures' PDF creation date, so the same results give byte-identical files
        # (a chapter executed again with nothing changed does not make the scorecard, which reads the results folder, stale)
        os.environ.setdefault("SOURCE_DATE_EPOCH", "0")
        try:
            papermill.execute_notebook(
                str(executed_in),
                str(executed_out),
                parameters=parameters,
                kernel_name=KERNEL["name"],
                cwd=str(edition.notebooks),
                log_output=True,
                progress_bar=False,
                # CRITICAL: a kernel stopped after a failed cell logs "KeyboardInterrupt caught" at ERROR level
                # on the shared stderr, which would add a second line to the one-line error
                extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
            )
        except papermill.PapermillExecutionError as err:
            shutil.rmtree(staged, ignore_errors=True)
            failed = edition.notebooks / "failed" / executed_out.name
            write_atomic(failed, lambda p: shutil.copyfile(executed_out, p))
            raise BookError(f"chapter {chapter} failed: {err.ename}: {err.evalue} (executed notebook kept in {failed})") from None
        finally:
            os.environ.pop(provenance.ENV, None)
            for var in (STAGING, RUNNING, CHAPTER):
                os.environ.pop(var, None)
        if guard is not None:
            guard()
        recorded = provenance.read(log)
        reused = sum(r["kind"] == "reused" and _earlier(r["path"]) for r in recorded)  # not inputs, and not its cost
        recorded = [r for r in recorded if r["kind"] != "reused"]
        missing = [r["label"] for r in recorded if r["kind"] == "output" and not (staged / r["label"]).is_file()]
        if missing:  # checked before anything is replaced: a failed run leaves the last good entry and results as they were
            shutil.rmtree(staged, ignore_errors=True)
            raise BookError(
                f"chapter {chapter} recorded writing {missing[0]} but its run left no such file (was {staged} removed?); "
                f"the edition keeps its last good run of {chapter}: run it again"
            )
        edition.entry(chapter).unlink(missing_ok=True)  # from here to the new entry, nothing vouches for the chapter
        _publish_results(staged, edition.profile, chapter, [r["label"] for r in recorded if r["kind"] == "output"])
        shutil.rmtree(staged, ignore_errors=True)
        records = [{**r, "path": str(results_dir() / r["label"])} if r["kind"] == "output" else r for r in recorded]
        records = cache.with_digests(records)
        # the CPU threads the kernel computed with: float sums, and so the last digits of results, depend on them
        facts = {"started": started, "finished": now(), "seconds": round(time.time() - start, 1), "threads": _threads(), "device": costs.device(), **commit()}
        facts |= {"reused": reused} if reused else {}
        path = write_atomic(edition.notebook(chapter), lambda p: shutil.copyfile(executed_out, p))
    entry = cache.Entry(
        chapter=chapter,
        key=cache.key(parts),
        parts=parts,
        notebook=sha256(path),
        inputs=[r for r in records if r["kind"] != "output"],
        outputs=[r for r in records if r["kind"] == "output"],
        facts=facts,
    )
    entry.save(edition.entry(chapter))  # after the notebook: an interrupted run leaves no entry that vouches for it
    return entry


def _earlier(path: str) -> bool:
    """Whether cached work a chapter took (a "reused" record) was done before this build started: a fine-tuning run
    the chapter itself cached a minute earlier, or a pre-training run trained ahead of it, is part of this build's cost."""
    since = float(os.environ.get(BUILD_STARTED) or "inf")
    return not Path(path).exists() or Path(path).stat().st_mtime < since


def _staleness(edition: Edition, name: str, parameters: dict[str, Any], force: bool | frozenset[str]) -> tuple[dict[str, Any], str | None]:
    """The chapter's key parts, and why it must run (None: reuse it); force: every chapter, or the chapters named."""
    parts = cache.key_parts(source_file(name), parameters)
    forced = force if isinstance(force, bool) else name in force
    return parts, "forced" if forced else cache.stale(cache.Entry.load(edition.entry(name)), parts, edition.notebook(name))


def _execute(edition: Edition, name: str, parameters: dict[str, Any], parts: dict[str, Any], reason: str, start: float, timed: bool) -> None:
    print(f"== {name} ({edition.profile}): executing, {reason}; parameters {parameters}", flush=True)
    try:
        entry = run_chapter(name, parameters, edition, parts)
    except BookError:
        edition.set_status(name, "failed", reason, time.time() - start)
        raise
    edition.set_status(name, "executed", reason, entry.facts["seconds"])
    if timed:
        costs.record_unless_reused(edition.profile, name, entry.facts, costs.where(entry.facts, 1))
    print(f"== {name}: done in {entry.facts['seconds']:.0f} s", flush=True)


Plans = list[tuple[str, dict[str, Any]]]


def build(profile: str, plans: Plans, force: bool | frozenset[str] = False, dry_run: bool = False, jobs: int = 1, timed: bool = True) -> Edition:
    """Execute the chapters whose dependencies changed (all with force), reuse the others; print one line each.
    With dry_run, only say what would be executed and why. With jobs > 1, up to that many chapters execute at once
    (`build_parallel`). `timed`: record each executed chapter's time in the profile's costs (not for a scaled run or -p values)."""
    previous = os.environ.get(BUILD_STARTED)
    os.environ[BUILD_STARTED] = str(time.time())  # for this build's chapters and their work ahead, not after it
    try:
        return _build(profile, plans, force, dry_run, jobs, timed)
    finally:
        os.environ.pop(BUILD_STARTED) if previous is None else os.environ.update({BUILD_STARTED: previous})


def _build(profile: str, plans: Plans, force: bool | frozenset[str], dry_run: bool, jobs: int, timed: bool) -> Edition:
    if jobs > 1 and not dry_run:
        return build_parallel(profile, plans, jobs, force, timed)
    edition = Edition(profile)
    for name, parameters in plans:
        start = time.time()
        parts, reason = _staleness(edition, name, parameters, force)
        if dry_run:
            print(f"== {name}: {'would be reused' if reason is None else 'would be executed, ' + reason}", flush=True)
            continue
        if reason is None:
            edition.set_status(name, "reused", "", time.time() - start)
            print(f"== {name}: reused ({profile} edition, nothing it depends on changed)", flush=True)
            continue
        _execute(edition, name, parameters, parts, reason, start, timed)
    return edition


def _worker_env(slot: int, jobs: int) -> dict[str, str]:
    """A chapter's share of the machine: the CPU cores divided among the jobs (torch, OpenMP and BLAS threads), and
    its own GPU when there are several."""
    env = thread_env(cpu_share(jobs))
    gpus = torch.cuda.device_count()
    if gpus > 1:
        env["CUDA_VISIBLE_DEVICES"] = str(slot % gpus)
    return env


def longest_first(edition: Edition, names: list[str]) -> list[str]:
    """The chapters ordered by how long each is expected to take, longest first: its last run in this edition, else the
    time committed with the book (`costs`), else it goes last, in its order. Started first, the longest is not left
    running alone at the end, on a first build too. Work run ahead of a chapter ("<chapter>:<run>") counts as long as
    the chapter and all its runs ahead together: the chapter waits for it, so it starts first."""
    committed, seconds = costs.expected(edition.profile), {}
    for name in names:
        entry = None if ":" in name else cache.Entry.load(edition.entry(name))
        seconds[name] = entry.facts.get("seconds", 0.0) if entry else committed.get(name)
    for name in names:
        if ":" in name:
            chapter = name.split(":")[0]
            chain = [seconds.get(chapter)] + [committed.get(n) for n in names if n.startswith(chapter + ":")]
            seconds[name] = sum(s for s in chain if s is not None) or None
    known = sorted((n for n in names if seconds[n] is not None), key=lambda n: -seconds[n])
    return known + [n for n in names if seconds[n] is None]


def default_jobs() -> int:
    """Chapters executed at once when neither --jobs nor $JOBS says: one per CPU core, at most MAX_JOBS (each chapter
    holds a model and its samples in memory)."""
    return max(1, min(os.cpu_count() or 1, MAX_JOBS))


RUNNER_PID = "BOOK_RUNNER_PID"  # in a worker's environment: the runner that started it and holds the edition's lock


def _stop(running: dict[str, tuple[subprocess.Popen, int, float, str]]) -> None:
    """End the workers still running, each with its process group (its kernel, in a session of its own, ends when it
    sees its worker gone)."""
    for process, *_ in running.values():
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.time() + 10
    for process, *_ in running.values():
        try:
            process.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _runner_alive() -> None:
    """In a worker, before it publishes: the runner that started it must still be its parent (and so hold the lock)."""
    runner = int(os.environ.get(RUNNER_PID) or 0)
    require(
        not runner or os.getppid() == runner,
        f"the runner that started this chapter (process {runner}) has stopped; nothing was published: run the build again",
    )


def build_parallel(profile: str, plans: list[tuple[str, dict[str, Any]]], jobs: int, force: bool | frozenset[str] = False, timed: bool = True) -> Edition:
    """Execute up to `jobs` chapters at once, each in a process of its own (`--execute-one`) with its share of the
    cores and, when there are several GPUs, a GPU of its own. A chapter is looked at once the chapters it reads
    (`cache.prerequisites`) among those planned are done: reused at once if nothing it depends on changed (as in a
    serial build), else started when a job is free, the longest (by the last build's times) first. The long work of a
    chapter found stale at the start that can run ahead (`AHEAD`: chapter 05's unsaved pre-training runs, chapter 09's
    frozen features by model and task, chapter 13's fine-tuning grid by task) runs first as jobs of its own, so that
    no job holds a core for all of it; the chapter then reuses what they saved.
    The first failure stops new starts; the chapters running finish, then the error is raised."""
    edition = Edition(profile)
    names = [name for name, _ in plans]
    stale = [(name, params) for name, params in plans if name in AHEAD and _staleness(edition, name, params, force)[1] is not None]
    tasks = {task: command for name, params in stale for task, command in AHEAD[name](profile, params).items()}
    waiting = {name: (params, cache.prerequisites(name, params) & set(names) | {t for t in tasks if t.startswith(name + ":")}) for name, params in plans}
    waiting = {task: ({}, set()) for task in tasks} | waiting
    waiting = {name: waiting[name] for name in longest_first(edition, list(waiting))}
    reasons: dict[str, str] = {}  # chapters found stale, waiting for a free job
    running: dict[str, tuple[subprocess.Popen, int, float, str]] = {}
    done: set[str] = set()
    failure: str | None = None
    try:
        while waiting or running:
            for name, (params, needs) in list(waiting.items()):
                if failure or not needs <= done:
                    continue
                start = time.time()
                if name in tasks:
                    reasons[name] = f"work ahead of chapter {name.split(':')[0]}"
                elif name not in reasons:
                    _, reason = _staleness(edition, name, params, force)
                    if reason is None:
                        del waiting[name]
                        edition.set_status(name, "reused", "", time.time() - start)
                        print(f"== {name}: reused ({profile} edition, nothing it depends on changed)", flush=True)
                        done.add(name)
                        continue
                    reasons[name] = reason
                if len(running) >= jobs:
                    continue
                del waiting[name]
                slot = min(set(range(jobs)) - {s for _, s, _, _ in running.values()})
                chapter = [sys.executable, "-m", "lib.edition.runner", "--profile", profile, "--execute-one", name, "--parameters-json", json.dumps(params)]
                command = tasks.get(name) or chapter
                print(f"== {name} ({profile}): executing in job {slot + 1} of {jobs}, {reasons[name]}", flush=True)
                env = {**os.environ, **_worker_env(slot, jobs), RUNNER_PID: str(os.getpid())}
                worker = subprocess.Popen(command, env=env, cwd=REPO_ROOT, start_new_session=True, preexec_fn=functools.partial(die_with_parent, os.getpid()))
                running[name] = (worker, slot, start, reasons[name])
            for name, (process, _, start, reason) in list(running.items()):
                if process.poll() is None:
                    continue
                del running[name]
                if process.returncode == 0 and name in tasks:
                    seconds = time.time() - start
                    print(f"== {name}: done in {seconds:.0f} s", flush=True)
                    if timed:
                        costs.record(profile, name, seconds, costs.where({"threads": cpu_share(jobs), "device": costs.device(), **commit()}, jobs))
                    done.add(name)
                elif process.returncode == 0:
                    entry = cache.Entry.load(edition.entry(name))
                    seconds = entry.facts["seconds"] if entry else time.time() - start
                    edition.set_status(name, "executed", reason, seconds)
                    if timed:
                        facts = entry.facts if entry else {"seconds": seconds}
                        costs.record_unless_reused(profile, name, facts, costs.where(facts, jobs))
                    done.add(name)
                else:
                    if name not in tasks:
                        edition.set_status(name, "failed", reason, time.time() - start)
                    failure = failure or name
            if failure and not running:
                break
            time.sleep(0.5)
    finally:
        _stop(running)  # on any way out (an error, Ctrl-C, SIGTERM): no worker outlives its runner
    require(failure is None, f"{'' if failure in tasks else 'chapter '}{failure} failed (its message is above); the chapters that did not need it were built")
    return edition


def _execute_one(profile: str, name: str, parameters: dict[str, Any]) -> None:
    """A worker of build_parallel: execute one chapter as a serial build would (its parent set its threads and GPU)."""
    edition = Edition(profile)
    parts, reason = _staleness(edition, name, parameters, force=True)
    entry = run_chapter(name, parameters, edition, parts, guard=_runner_alive)
    edition.set_status(name, "executed", reason, entry.facts["seconds"])  # the worker records its own execution
    print(f"== {name}: done in {entry.facts['seconds']:.0f} s", flush=True)


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.edition.runner", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=os.environ.get("PROFILE", "default"))
    parser.add_argument("--chapters", default="", help="comma-separated chapter names (default: all)")
    parser.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="set a parameter of the chapters that declare it (VALUE is read as YAML)",
    )
    parser.add_argument(
        "--only",
        action="store_true",
        help="execute the chapters named and no others: chapters that read their results are not looked at (their pages then say they were not executed)",
    )
    parser.add_argument("--force", action="store_true", help="execute the chapters even where nothing they depend on changed")
    parser.add_argument("--plan", action="store_true", help="only say which chapters would be executed, and why")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply the profile's sizes by this (0-1], never below the quick profile's: a smoke test of a large profile "
        "(build it into its own folders: BOOK_BUILD_DIR, BOOK_RESULTS_DIR, BOOK_MODELS_DIR)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ["JOBS"]) if os.environ.get("JOBS") else None,
        help=f"chapters executed at once (default $JOBS, else one per CPU core up to {MAX_JOBS} and the chapters named)",
    )
    parser.add_argument("--execute-one", help=argparse.SUPPRESS)  # a worker of --jobs: execute this chapter (the parent holds the lock)
    parser.add_argument("--parameters-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    require(args.jobs is None or args.jobs >= 1, f"--jobs must be at least 1, got {args.jobs}")
    if args.execute_one:
        _execute_one(args.profile, args.execute_one, json.loads(args.parameters_json))
        return
    names = comma_list(args.chapters)
    require(bool(names) or not args.chapters, f"--chapters {args.chapters!r} names no chapter; chapters are: {', '.join(chapters())}")
    names = names or chapters()
    overrides = command_line_values(args.parameter)
    plans = plan(args.profile, names, overrides, args.scale)  # every value checked before anything runs
    if not args.only:
        plans = with_dependents(args.profile, plans, overrides, args.scale)
        extra = [name for name, _ in plans if name not in names]
        if extra:
            print(f"== also {', '.join(extra)}: run before in this edition, they read results of the chapters named (--only: not them)", flush=True)
    jobs = args.jobs or min(default_jobs(), len(plans))
    for var in ("BOOK_DATA_DIR", "BOOK_CACHE_DIR", "BOOK_RESULTS_DIR", "BOOK_MODELS_DIR"):
        if os.environ.get(var):  # the kernels run in the output folder: make relative settings absolute
            os.environ[var] = str(Path(os.environ[var]).expanduser().resolve())
    # the kernels import this checkout's lib, the code the cache keys are made of (lib/__init__.py checks it)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ["BOOK_LIB_ROOT"] = str(REPO_ROOT)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    if args.plan:
        build(args.profile, plans, dry_run=True)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated runner ends its workers first (build_parallel)
    edition = Edition(args.profile)
    with edition.locked("python -m lib.edition.runner"):
        forced = frozenset(names) if args.force else False  # the chapters named, not those that read them
        build(args.profile, plans, force=forced, jobs=jobs, timed=args.scale == 1 and not overrides)  # the profile's own times only
    print(f"executed notebooks of the {args.profile} edition: {edition.notebooks}", flush=True)


if __name__ == "__main__":
    main()
