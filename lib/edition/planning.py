"""What a build runs, and in which order: the chapters that read the results of those named, in dependency order; the
long work that runs as jobs ahead of a chapter; the longest first; how many jobs at once."""

from __future__ import annotations

import os
from typing import Any

from ..core.profiles import plan
from ..core.sources import chapters, declared_parameters
from . import cache, costs, features, finetuning, train_ahead
from .folders import Edition

MAX_JOBS = 4  # the most chapters default_jobs runs at once


AHEAD = {m.CHAPTER: m.ahead for m in (train_ahead, features, finetuning)}  # chapter → its long work, as commands run before it


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


def longest_first(edition: Edition, names: list[str]) -> list[str]:
    """The chapters ordered by how long each is expected to take, longest first: its last run in this edition, else the
    time measured here or committed with the book (`costs.expected`), else it goes last, in its order. Started first, the longest is not left
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
