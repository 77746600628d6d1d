"""A Sphinx extension for the reference list: entries labelled as the text cites them, author-year ("Luo et al., 2021",
"Reimers & Gurevych, 2019", "Biš et al., 2021"), instead of pybtex's alpha labels ("LKM21", "BivsPL21").

It registers the pybtex style `authoryear` (pybtex's plain style, sorted by author, with these labels), which
`_config.yml` names as `bibtex_default_style`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from pybtex.database import Entry
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.application import Sphinx


def author_year(entry: Entry) -> str:
    """ "Luo, 2021", "Reimers & Gurevych, 2019", "Luo et al., 2021": last names as printed (LaTeX accents resolved)."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [Text.from_latex(" ".join(p.prelast_names + p.last_names)).render_as("text") for p in people]
    who = names[0] if len(names) == 1 else " & ".join(names) if len(names) == 2 else f"{names[0]} et al." if names else entry.key
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabels(BaseLabelStyle):
    """Author-year labels; two entries that would share one get a, b, … after the year."""

    def format_labels(self, sorted_entries: Iterable[Entry]) -> Iterator[str]:
        entries = list(sorted_entries)
        labels = [author_year(e) for e in entries]
        shared, seen = Counter(labels), Counter()
        for label in labels:
            if shared[label] > 1:
                seen[label] += 1
                yield label + "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            else:
                yield label


class AuthorYearStyle(PlainStyle):
    default_label_style = "authoryear"


register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels)
register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)


def setup(app: Sphinx) -> dict[str, Any]:
    return {"parallel_read_safe": True, "parallel_write_safe": True}
