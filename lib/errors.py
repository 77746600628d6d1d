"""The one exception type the book raises for bad input, with a message that says what to do."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])


class BookError(Exception):
    """Bad input or a missing resource. The message is one line: what is wrong and what to do."""


def require(condition: bool, message: str) -> None:
    """Raise BookError(message) unless condition holds."""
    if not condition:
        raise BookError(message)


def cli(func: F) -> F:
    """Run a command-line entry point: a BookError becomes one line on stderr and exit status 2."""

    @wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except BookError as err:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]
