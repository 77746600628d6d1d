"""Numbers and lists as the chapters' sentences print them: rounded without "-0.000", signed differences, spans of
values and lists joined with "and"."""

from __future__ import annotations

from collections.abc import Iterable


def rounded(value: float, digits: int = 3) -> str:
    """A number as printed: "0.000" for what rounds to zero, never "-0.000"."""
    text = f"{value:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text


def signed(value: float, digits: int = 1) -> str:
    """A difference as printed: "+1.2", "-0.3", and "0.0" for what rounds to zero (never "-0.0")."""
    text = rounded(value, digits)
    return text if text.startswith("-") or float(text) == 0 else "+" + text


def span(low: str, high: str) -> str:
    """ "low to high", or one value where both print the same."""
    return low if low == high else f"{low} to {high}"


def spread(values: Iterable[float], digits: int, sign: bool = False) -> str:
    """The lowest and highest of `values` as a `span` ("0.78 to 0.89"; with `sign`, "+0.12 to +0.49")."""
    values = list(values)
    show = (lambda v: signed(v, digits)) if sign else (lambda v: rounded(v, digits))
    return span(show(min(values)), show(max(values)))


def whole_range(values: Iterable[float]) -> str:
    """ "12" or "12 to 32": the lowest and highest of `values` as whole numbers, with thousands separators."""
    values = list(values)
    return span(f"{int(min(values)):,}", f"{int(max(values)):,}")


def listed(items: list[str]) -> str:
    """Items in words: "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
