"""Text that reaches a page's Markdown (MyST) as it is: names and values a run was given (a model folder's name, a
parameter's value) are escaped, so that no `<b>`, emphasis, role or math in them is read as markup."""

from __future__ import annotations

import re

MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>$|~^#])")


def escape(text: str) -> str:
    """Text that MyST prints as it is (no emphasis, math, roles, HTML or cell breaks)."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", text)


def code(text: str) -> str:
    """Text as an inline code span that shows it as it is, backticks included (a fence longer than any run of them)."""
    fence = "`" * (max(map(len, re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
