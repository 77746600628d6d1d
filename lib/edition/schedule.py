"""Run a build: each planned chapter reused when nothing it depends on changed, else executed, one at a time or up to
`jobs` at once in processes of their own (with the work ahead of chapters as jobs too), the longest first."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import torch

from ..core.sources import source_file
from ..errors import BookError, require
from ..processes import die_with_parent
from ..settings import REPO_ROOT, cpu_share, thread_env
from . import cache, costs
from .commit import commit
from .execute import BUILD_STARTED, run_chapter
from .folders import Edition
from .planning import AHEAD, longest_first
from .vouching import vouched_outputs


def _staleness(edition: Edition, name: str, parameters: dict[str, Any], force: bool | frozenset[str]) -> tuple[dict[str, Any], str | None]:
    """The chapter's key parts, and why it must run (None: reuse it); force: every chapter, or the chapters named."""
    parts = cache.key_parts(source_file(name), parameters)
    forced = force if isinstance(force, bool) else name in force
    if forced:
        return parts, "forced"
    return parts, cache.stale(cache.Entry.load(edition.entry(name)), parts, edition.notebook(name), vouched_outputs(edition, but=name))


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
