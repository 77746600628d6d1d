"""Checks of a chapter's parameters: each bad value stops the chapter with one line naming the parameter and what it
accepts, before anything is computed."""

from __future__ import annotations

from ..errors import require
from .sources import comma_list


def positive_int(name: str, value: object) -> int:
    """A parameter that must be a whole number above zero."""
    require(isinstance(value, int) and not isinstance(value, bool) and value > 0, f"parameter {name} must be a positive integer, got {value!r}")
    return value


def sample_size(name: str, value: object, sentences: int) -> int:
    """A number of tokens to sample from `sentences` sentences: a positive integer no larger than they can hold (512
    tokens each, the longest input of these models), so that a typo cannot ask for terabytes."""
    positive_int(name, value)
    require(value <= 512 * sentences, f"parameter {name} ({value:,}) is more tokens than {sentences:,} sentences can hold; ask for at most {512 * sentences:,}")
    return value


def positive_number(name: str, value: object) -> float:
    """A parameter that must be a number above zero."""
    require(isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0, f"parameter {name} must be a positive number, got {value!r}")
    return value


def positive_numbers(name: str, value: object) -> list[float]:
    """A parameter of comma-separated numbers above zero (e.g. `"1,0.25"`); an empty string gives none."""
    items = comma_list(value)
    numbers = []
    for item in items:
        try:
            numbers.append(float(item))
        except ValueError:
            numbers.append(float("nan"))
    require(all(n > 0 for n in numbers), f"parameter {name} must be comma-separated positive numbers, got {value!r}")
    return numbers


def share(name: str, value: object) -> float:
    """A parameter that must be a number in (0, 1]."""
    require(isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1, f"parameter {name} must be in (0, 1], got {value!r}")
    return value


def per_task(name: str, value: object, tasks: list[str]) -> dict:
    """A parameter that maps task names to values (`n_train = {"sst2": 4000, ...}`), with an entry for every task run."""
    missing = [task for task in tasks if not isinstance(value, dict) or task not in value]
    require(not missing, f"parameter {name} has no entry for {', '.join(missing)}: give one for every task in tasks ({', '.join(tasks)})")
    return value
