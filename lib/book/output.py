"""Where a chapter's displays go: IPython's `display` under a notebook kernel; where IPython is not installed (the
headless executor, `lib.edition.headless`, on a machine without notebook tooling) the text form on stdout."""

from __future__ import annotations

from typing import Any

FINDINGS = "book_findings"  # output metadata of a chapter's findings (`chapter.findings`), which its summary repeats
ANSWER = "book_answer"  # output metadata of a chapter's answer (`chapter.answer`), which its page shows under the title

try:
    from IPython.display import Markdown, display
except ModuleNotFoundError:  # headless: every display has a text form (tables their "text/plain", figures their files)

    class Markdown(str):  # type: ignore[no-redef]
        """Markdown text, printed as written."""

    def display(obj: Any, raw: bool = False, metadata: dict | None = None) -> None:  # type: ignore[no-redef]
        """Print obj's text form: a raw bundle's "text/plain" (a figure: its label), else str(obj)."""
        if raw and isinstance(obj, dict):
            text = obj.get("text/plain") or f"[figure {next(iter((metadata or {}).values()), {}).get('name', '')}]".replace(" ]", "]")
        else:
            text = str(obj)
        print(text, flush=True)


__all__ = ["Markdown", "display"]
