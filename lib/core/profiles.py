"""Parameter profiles (`profiles/<name>.yaml`): the values a profile changes from the chapters' `parameters` cells,
under `all` (for every chapter that declares the name) or under a chapter's name, each checked against the cells
(known name, same kind of value as the cell's)."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Hashable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import yaml

from ..errors import BookError, require
from ..provenance import record
from ..settings import REPO_ROOT
from .checks import per_task
from .sources import chapters, comma_list, declared_parameters, source_file

T = TypeVar("T")

PROFILES = Path(os.environ.get("BOOK_PROFILES_DIR") or REPO_ROOT / "profiles")  # another folder of profiles: $BOOK_PROFILES_DIR
SHARED = "all"  # profile section whose values go to every chapter that declares them

KINDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a mapping"}


SCALARS = (bool, int, float, str)


def _describe(default: Any) -> str:
    return KINDS.get(type(default), type(default).__name__)


def _checked(value: Any, default: Any, where: str) -> Any:
    """value checked against the kind of default, recursively (a list's items against the default's first item, a
    mapping's values against the default's value for that key, else its first value): only plain data (text, numbers,
    true/false, lists and mappings of them) passes, so that a value written into a notebook can never run as code."""
    if isinstance(default, dict):
        require(
            isinstance(value, dict) and all(isinstance(k, str) for k in value),
            f"{where} must be a mapping with text keys like its default {default!r}, got {value!r}",
        )
        first = next(iter(default.values()), None)
        return {k: _checked(v, default.get(k, first), f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(default, list):
        require(isinstance(value, list), f"{where} must be a list like its default {default!r}, got {value!r}")
        first = default[0] if default else None
        return [_checked(v, first, f"{where}[{i}]") for i, v in enumerate(value)]
    if default is None:
        require(value is None or type(value) in SCALARS, f"{where} must be text, a number or true/false, got {value!r}")
        return _finite(value, where)
    kind = type(default)
    if type(value) is kind:
        return _finite(value, where)
    if kind is float and type(value) is int:
        return float(value)
    if kind in (int, float) and type(value) is str:
        try:
            number = float(value)
        except ValueError:
            number = None
        if number is not None and (kind is float or number.is_integer()):
            return _finite(kind(number), where)
    raise BookError(f"{where} must be {_describe(default)} like its default {default!r}, got {value!r}")


def _finite(value: Any, where: str) -> Any:
    require(not isinstance(value, float) or math.isfinite(value), f"{where} must be a finite number, got {value!r}")
    return value


class _UniqueKeys(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (the safe loader keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
            if isinstance(key, Hashable) and key in lines:
                twice = f"key {key!r} is given twice, on lines {lines[key]} and {line}; keep one"
                raise yaml.constructor.ConstructorError(None, None, twice, key_node.start_mark)
            lines[key] = line
        return super().construct_mapping(node, deep)


def command_line_values(pairs: list[list[str]]) -> dict[str, Any]:
    """`-p NAME VALUE` pairs of a command line as values (VALUE is YAML); one clear line for a value that is not."""
    values = {}
    for name, value in pairs:
        try:
            values[name] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise BookError(f"-p {name}: {value!r} is not a YAML value; quote strings and write mappings as '{{a: 1, b: 2}}'") from None
    return values


def checked_value(chapter: str, name: str, value: Any) -> Any:
    """value for a chapter's parameter, if the chapter declares it with a value of the same kind, nested values
    included (an int for a float is taken; a string that reads as a number is taken for a number); otherwise one clear
    line. `profile` is not a parameter a value can set: `--profile` (or the profile file's name) names the edition."""
    declared = declared_parameters(chapter)
    require(name in declared, f"{chapter} has no parameter {name!r}; its parameters are: {', '.join(declared)}")
    require(name != "profile", f"{chapter}: `profile` names the edition and its results folder; choose it with --profile (or PROFILE=), not -p")
    checked = _checked(value, declared[name], f"{chapter}: parameter {name}")
    require(name != "seed" or checked >= 0, f"{chapter}: parameter seed must be a whole number ≥ 0 (NumPy's seeds are), got {checked!r}")
    return checked


def load_profile(profile: str) -> dict[str, dict[str, Any]]:
    """A profile's sections (`all` and chapter names), each checked: known chapters, declared names, right types."""
    path = PROFILES / f"{profile}.yaml"
    known = sorted(p.stem for p in PROFILES.glob("*.yaml"))
    require(path.is_file(), f"unknown profile {profile!r}; choose one of {', '.join(known)} (files in {PROFILES})")
    try:
        spec = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeys) or {}  # a safe loader (yaml.SafeLoader)
    except UnicodeDecodeError as err:
        raise BookError(f"{path} is not UTF-8 text (byte {err.start}); save it as UTF-8") from None
    except yaml.YAMLError as err:
        raise BookError(f"{path} is not valid YAML: {str(err).splitlines()[0]}") from None
    require(isinstance(spec, dict), f"{path} must be a mapping of chapter names (or `{SHARED}`) to parameters")
    for section, values in spec.items():
        require(section == SHARED or section in chapters(), f"{path.name}: {section!r} is not a chapter (chapters: {', '.join(chapters())}) nor `{SHARED}`")
        require(isinstance(values, dict) or values is None, f"{path.name}: {section} must map parameter names to values")
        spec[section] = values or {}
    for name, value in spec.get(SHARED, {}).items():
        declaring = [c for c in chapters() if name in declared_parameters(c)]
        require(declaring, f"{path.name}: `{SHARED}` sets {name!r}, which no chapter declares")
        for chapter in declaring:
            checked_value(chapter, name, value)
    for section, values in spec.items():
        if section != SHARED:
            for name, value in values.items():
                checked_value(section, name, value)
    return spec


def description(profile: str) -> str:
    """The first sentence of a profile file's opening comment (what the edition is), or "" without one."""
    path = PROFILES / f"{profile}.yaml"
    if not path.is_file():
        return ""
    lines = path.read_text(encoding="utf-8").splitlines()
    comment = " ".join(line.lstrip("#").strip() for line in itertools.takewhile(lambda line: line.startswith("#"), lines))
    return comment.split(". ")[0].rstrip(".") + "." if comment else ""


PROFILE_NAME = "{profile}"  # in a profile's text values, the profile's own name: a copied profile names its own models


def profile_parameters(profile: str, chapter: str) -> dict[str, Any]:
    """The values a profile changes for a chapter (its `all` values the chapter declares, then its own), plus the profile
    name, which also replaces `{profile}` in its text values (chapter 05's `names: "{profile}-roberta-pe,…"`)."""
    spec = load_profile(profile)
    declared = declared_parameters(chapter)
    shared = {k: v for k, v in spec.get(SHARED, {}).items() if k in declared}
    values = {**shared, **spec.get(chapter, {})}
    return {k: v.replace(PROFILE_NAME, profile) if isinstance(v, str) else v for k, v in values.items()} | {"profile": profile}


SIZES = frozenset(
    "n_sentences n_pairs n_fit n_words pca_tokens n_train n_dev n_test max_pairs plane_points check_rows track_blocks "
    "vocab_size hidden_size layers intermediate_size seq_len steps batch_size warmup eval_every step_rounds".split()
)  # the parameters `scaled` shrinks: sample sizes, model sizes, run lengths
SMOKE = "quick"  # the profile whose sizes are known to run: `scaled` never goes below them


def scaled(chapter: str, values: dict[str, Any], factor: float) -> dict[str, Any]:
    """A profile's values for a chapter with every size the chapter has (`SIZES`, the profile's or the cell's; in a
    mapping, each entry) times factor, rounded, but never below the smaller of the value and the size known to run
    (the quick profile's, else the cell's; a 0 that means "all" becomes it): a large profile run small, to check that every chapter runs with its
    settings (`runner --scale`)."""
    require(0 < factor <= 1, f"--scale must be in (0, 1], got {factor}")
    declared = declared_parameters(chapter)
    floors = {**declared, **(profile_parameters(SMOKE, chapter) if (PROFILES / f"{SMOKE}.yaml").is_file() else {})}

    def shrink(value: Any, floor: Any) -> Any:
        if isinstance(value, dict):
            return {k: shrink(v, floor.get(k, v) if isinstance(floor, dict) else v) for k, v in value.items()}
        if isinstance(value, bool) or not isinstance(value, int) or value < 0 or not isinstance(floor, int):
            return value
        if value == 0:  # 0 = all of them: the size known to run, if that is a number
            return floor
        return max(round(value * factor), min(value, floor), 1)

    sizes = {k: shrink(v, floors.get(k)) for k, v in {**declared, **values}.items() if k in SIZES}
    return {**values, **{k: v for k, v in sizes.items() if k in values or v != declared[k]}}


def config(cls: type[T], namespace: Mapping[str, object], **fixed: object) -> T:
    """A dataclass (e.g. `PretrainConfig`) built from the parameters cell: each field takes the chapter's parameter of
    the same name, unless given in `fixed`; the config's own `check()` then runs. So a hyperparameter is named once in a
    chapter, in its parameters cell."""
    names = {f.name for f in fields(cls) if f.init}
    taken = {n: namespace[n] for n in names - set(fixed) if n in namespace}
    built = cls(**taken, **fixed)
    if hasattr(built, "check"):
        built.check()
    return built


def chapter_parameters(chapter: str, profile: str) -> dict[str, object]:
    """Another chapter's parameters in this edition (its cell's values, with the profile's changes when the profile is a
    file in profiles/), recorded as inputs of the running chapter so that it runs again when they change."""
    record("data", source_file(chapter), f"parameters cell of {chapter}")
    values = dict(declared_parameters(chapter))
    if (PROFILES / f"{profile}.yaml").is_file():
        record("data", PROFILES / f"{profile}.yaml", f"profile {profile}")
        values.update(profile_parameters(profile, chapter))
    return values


TASKS = "tasks"  # a chapter's comma-separated tasks, which its mappings keyed by task name must each cover


def check_per_task(chapter: str, values: dict[str, Any]) -> None:
    """Each of the chapter's mappings keyed by task name (those whose default has an entry for each default task, as
    chapter 09's `n_train`) checked to have an entry for every known task the run names, before any chapter runs."""
    declared = declared_parameters(chapter)
    if TASKS not in declared:
        return
    known = set(comma_list(declared[TASKS]))
    tasks = [task for task in comma_list({**declared, **values}[TASKS]) if task in known]  # an unknown task: the chapter's own check
    for name, default in declared.items():
        if isinstance(default, dict) and set(default) == known:
            per_task(f"{name} of {chapter}", values.get(name, default), tasks)


def plan(profile: str, names: list[str], overrides: dict[str, Any], scale: float = 1.0) -> list[tuple[str, dict[str, Any]]]:
    """(chapter, parameters) for each chapter to run, every value checked. An override goes to the chapters that
    declare it; one that none of them declares is an error. With scale < 1 the profile's sizes shrink (`scaled`)."""
    for name in names:
        require(name in chapters(), f"no chapter {name!r}; chapters are: {', '.join(chapters())}")
    for key in overrides:
        if not any(key in declared_parameters(c) for c in names):
            listing = "; ".join(f"{c}: {', '.join(declared_parameters(c))}" for c in names)
            raise BookError(f"unknown parameter {key!r} for {', '.join(names)}; parameters are: {listing}")
    out = []
    for chapter in names:
        own = {k: checked_value(chapter, k, v) for k, v in overrides.items() if k in declared_parameters(chapter)}
        values = profile_parameters(profile, chapter)
        planned = {**(scaled(chapter, values, scale) if scale != 1 else values), **own}
        check_per_task(chapter, planned)
        out.append((chapter, planned))
    return out
