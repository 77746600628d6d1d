"""Tables as the book prints them: column names as words, numbers formatted once, booleans as marks, a caption and a
label. A chapter shows a table (`chapter.show`) as a MyST `{table}` directive, so the pages and the PDF number it
("Table 2.3") and prose can point to it with {numref}`tbl-02-pooled`; the edition gives every table its label
(`label_tables`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pandas as pd

from ..experiments.cells import annotated, cell_text, plus_minus  # noqa: F401  (`tables.plus_minus`, ... in the chapters and tests)
from . import tabs
from .markdown import escape
from .output import display

if TYPE_CHECKING:
    import nbformat  # notebook tooling: staging only, not where a chapter executes (`lib.edition.headless`)

KEY = "book_table"  # output metadata of a table shown by `chapter.show`: {"name": given name or None}
PLACEHOLDER = "tbl-unlabelled"  # the `:name:` a table has until the edition labels it

HEADERS = {  # result columns whose words are not their name with spaces for underscores
    "ci95_low": "95% CI low",
    "ci95_high": "95% CI high",
    "excess_ci95_low": "excess 95% CI low",
    "excess_ci95_high": "excess 95% CI high",
    "n_pairs": "pairs",
    "n_tokens": "tokens",
    "n_vectors": "vectors",
    "n_sentences": "sentences",
    "n_layers": "layers flagged",
    "max_abs_z": "max |z|",
    "median_z": "median z",
    "argmin_dim": "argmin dim",
    "argmax_dim": "argmax dim",
    "argmin_percent": "argmin (%)",
    "argmax_percent": "argmax (%)",
    "model_outlier": "outlier of the model",
    "spec": "model spec",
    "dim": "dimension",
    "top_dim": "top dimension",
    "top_other": "largest other neuron",
    "top_other_dim": "its dimension",
    "mean_all": "mean of all neurons",
    "I1": "I1",
    "I2": "I2",
    "IsoScore": "IsoScore",
    "C": "C",
    "claim_id": "claim",
    "p_holm": "p (Holm)",
    "dev_accuracy": "dev accuracy",
    "test_accuracy": "test accuracy",
    "whitening_fit_texts": "whitening fitted on",
    "positions_flagged_percent": "positions flagged (%)",
}
UNITS = [(r"_x100(?=_|$)", " × 100"), (r"_percent(?=_|$)", " (%)"), (r"_millions(?=_|$)", " (millions)"), (r"^percent$", "%"), (r"_ci95_", " 95% CI ")]


def header(column: object) -> str:
    """The words a column is printed under: `HEADERS` where it names the column, else its name with units spelled
    (`spearman_x100` → "spearman × 100", `argmax_percent` → "argmax (%)") and spaces for underscores."""
    name = str(column)
    if name in HEADERS:
        return HEADERS[name]
    for pattern, words in UNITS:
        name = re.sub(pattern, words, name)
    return name.replace("_", " ").strip()


def numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def myst(frame: pd.DataFrame, caption: str, precision: int, name: str | None = None) -> str:
    """The table as a MyST `{table}` directive: caption, label, headers in words, numbers right-aligned."""
    heads = [escape(header(c)) for c in frame.columns]
    align = ["---:" if numeric(frame[c]) else ":---:" if pd.api.types.is_bool_dtype(frame[c]) else ":---" for c in frame.columns]
    rows = [[escape(cell_text(v, precision)) for v in row] for row in frame.itertuples(index=False)]
    if not rows:  # a table with no rows still prints as a table (LaTeX needs a body)
        rows = [["none"] + ["–"] * (len(heads) - 1)]
    lines = ["| " + " | ".join(heads) + " |", "|" + "|".join(align) + "|"] + ["| " + " | ".join(r) + " |" for r in rows]
    return f":::{{table}} {caption}\n:name: {name or PLACEHOLDER}\n\n" + "\n".join(lines) + "\n:::\n"


def plain(frame: pd.DataFrame, caption: str, precision: int) -> str:
    """The table as text, for a notebook read outside the book."""
    shown = frame.rename(columns=header).map(lambda v: cell_text(v, precision).replace("\u00a0", " "))
    return caption + "\n" + shown.to_string(index=False)


def html(frame: pd.DataFrame, caption: str, precision: int) -> str:
    """The table as HTML, for Jupyter and Colab (the book prints the MyST version)."""
    shown = frame.rename(columns=header).map(lambda v: cell_text(v, precision))
    return shown.style.set_caption(caption).hide(axis="index").to_html()


def bundle(frame: pd.DataFrame, caption: str, precision: int = 3, name: str | None = None, tab: str | None = None) -> tuple[dict[str, str], dict]:
    """A table as display data and metadata (for `show`): MyST for the book's
    pages and PDF, HTML for Jupyter, text for a terminal; marked so that the edition labels it (`label_tables`)."""
    frame = frame.reset_index(drop=True)
    data = {"text/markdown": myst(frame, caption, precision), "text/html": html(frame, caption, precision), "text/plain": plain(frame, caption, precision)}
    return data, {KEY: {"name": name}} | ({tabs.KEY: tab} if tab else {})


def lift_constants(frame: pd.DataFrame, caption: str, precision: int) -> tuple[pd.DataFrame, str]:
    """A table of several rows without its columns that hold one value in every row, which the caption states once
    instead ("the same in every row: layers 2, width 64"), so that a wide table fits the text column."""
    same = [c for c in frame.columns if len(frame) > 1 and frame[c].astype(str).nunique() == 1]
    if not same or len(same) == len(frame.columns):
        return frame, caption
    said = ", ".join(f"{header(c)} {cell_text(frame[c].iloc[0], precision)}" for c in same)
    return frame.drop(columns=same), f"{caption} (the same in every row: {said})"


def show(frame: pd.DataFrame, caption: str, precision: int = 3, name: str | None = None, tab: str | None = None, lift: bool = False) -> None:
    """Display a table with a caption and without the index: numbered on the book's pages and in its PDF; `name` makes
    it referenceable as {numref}`tbl-<chapter number>-<name>`; `tab` (a model's name) puts it in that model's tab;
    `lift` states the columns with one value in every row in the caption instead (`lift_constants`)."""
    if lift:
        frame, caption = lift_constants(frame.reset_index(drop=True), caption, precision)
    data, metadata = bundle(frame, caption, precision, name, tab)
    display(data, raw=True, metadata=metadata)


def label(chapter: str, name: str) -> str:
    """A table's reference target, tbl-<chapter number>-<name>: label("02_outlier_neurons", "pooled") is "tbl-02-pooled"."""
    return f"tbl-{chapter[:2]}-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}"


_NAME = re.compile(r"^:name: (.*)$", re.MULTILINE)


def label_tables(nb: nbformat.NotebookNode, chapter: str) -> list[str]:
    """Give every table a chapter shows its label: its given name (`show(..., name=)`) under `label`, else its
    number on the page; the labels, in page order."""
    labels: list[str] = []
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if KEY not in output.get("metadata", {}):
                continue
            given = output["metadata"][KEY].get("name")
            target = label(chapter, given) if given else label(chapter, str(len(labels) + 1))
            while target in labels:
                target += "-b"
            labels.append(target)
            output["data"]["text/markdown"] = _NAME.sub(f":name: {target}", output["data"]["text/markdown"], count=1)
    return labels
