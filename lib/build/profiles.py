"""Parameter profiles (`profiles/<name>.yaml`): the values a profile changes from the chapters' `parameters` cells,
under `all` (for every chapter that declares the name) or under a chapter's name, each checked against the cells
(known name, same kind of value as the cell's)."""

from __future__ import annotations

from typing import Any

import yaml

from ..errors import BookError, require
from ..settings import REPO_ROOT
from .sources import chapters, declared_parameters

PROFILES = REPO_ROOT / "profiles"
SHARED = "all"  # profile section whose values go to every chapter that declares them

KINDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a mapping"}


def checked_value(chapter: str, name: str, value: Any) -> Any:
    """value for a chapter's parameter, if the chapter declares it with a value of the same kind (an int for a float
    is taken; a string that reads as a number is taken for a number); otherwise one clear line."""
    declared = declared_parameters(chapter)
    require(name in declared, f"{chapter} has no parameter {name!r}; its parameters are: {', '.join(declared)}")
    default = declared[name]
    kind = type(default)
    if default is None or isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool):
        return value
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind in (int, float) and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
        if number is not None and (kind is float or number.is_integer()):
            return kind(number)
    raise BookError(f"{chapter}: parameter {name} must be {KINDS.get(kind, kind.__name__)} like its default {default!r}, got {value!r}")


def load_profile(profile: str) -> dict[str, dict[str, Any]]:
    """A profile's sections (`all` and chapter names), each checked: known chapters, declared names, right types."""
    path = PROFILES / f"{profile}.yaml"
    known = sorted(p.stem for p in PROFILES.glob("*.yaml"))
    require(path.is_file(), f"unknown profile {profile!r}; choose one of {', '.join(known)} (files in {PROFILES})")
    try:
        spec = yaml.safe_load(path.read_text()) or {}
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


def profile_parameters(profile: str, chapter: str) -> dict[str, Any]:
    """The values a profile changes for a chapter (its `all` values the chapter declares, then its own), plus the profile name."""
    spec = load_profile(profile)
    declared = declared_parameters(chapter)
    shared = {k: v for k, v in spec.get(SHARED, {}).items() if k in declared}
    return {**shared, **spec.get(chapter, {}), "profile": profile}
