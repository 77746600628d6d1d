"""Where chapters write their tables (CSV + JSON metadata) and figures (PNG + PDF), atomically.

Layout, with a stable schema a scorecard can read:
    results/<profile>/<model>/<chapter>/<table>.csv     one file per table
    results/<profile>/<model>/<chapter>/meta.json       parameters, model facts, table columns
    results/<profile>/figures/<chapter>/<name>.png|pdf  figures (may compare models)
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from .. import __version__
from ..core import store
from ..core.store import Schema
from ..errors import BookError, require
from ..experiments import plotting
from ..io import write_atomic
from ..provenance import record
from ..settings import output_dir, slug
from . import figure_labels, tabs
from .output import display


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)


def _text_boxes(fig, dpi: float) -> str:
    """`plotting.text_boxes` as JSON, in the pixels of the figure's PNG (drawn once in memory, as `Results.figure` saves it)."""
    drawn: list[list[dict]] = []
    hook = fig.canvas.mpl_connect("draw_event", lambda event: drawn.append(plotting.text_boxes(fig, event.renderer)))
    try:
        fig.savefig(io.BytesIO(), format="png", dpi=dpi, bbox_inches="tight")
    finally:
        fig.canvas.mpl_disconnect(hook)
    return json.dumps(drawn[-1], separators=(",", ":"))


class Results:
    """Writes one chapter's outputs for one profile."""

    def __init__(self, chapter: str, profile: str, root: Path | None = None):
        require(bool(re.fullmatch(r"[A-Za-z0-9._-]+", profile)), f"profile name {profile!r} must be letters, digits, '.', '_' or '-'")
        self.chapter, self.profile = chapter, profile
        self.root = (root or output_dir()) / profile

    def folder(self, model: str) -> Path:
        return store.folder(self.profile, model, self.chapter, self.root.parent)

    def table(self, frame: pd.DataFrame, schema: Schema, model: str, parameters: dict[str, Any], model_info: dict[str, Any] | None = None) -> Path:
        """Write a table as CSV, checked against its schema (declared in its chapter's experiment module: `CHAPTER.table`),
        and record its columns and the run's parameters in meta.json (no date: the same results give the same bytes;
        when a chapter ran is in the build report)."""
        require(isinstance(schema, Schema), f"table {schema!r}: pass its schema, declared in the chapter's module (CHAPTER.table(...)), not a name")
        require(schema.chapter == self.chapter, f"table {schema.name} is declared for {schema.chapter}, not {self.chapter}")
        schema.check(frame)
        name = schema.name
        folder = self.folder(model)
        path = write_atomic(folder / f"{slug(name)}.csv", lambda p: frame.to_csv(p, index=False))
        meta_path = folder / store.META
        try:
            earlier = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
        except (OSError, ValueError):
            raise BookError(f"{meta_path} is not readable JSON; delete it and run the chapter again") from None
        meta = {
            "tables": earlier.get("tables", {}),
            "chapter": self.chapter,
            "profile": self.profile,
            "model": model,
            "model_info": model_info or earlier.get("model_info", {}),
            "parameters": parameters,
            "lib_version": __version__,
        }
        meta["tables"][slug(name)] = {"file": path.name, "columns": list(map(str, frame.columns)), "rows": len(frame)}
        write_atomic(meta_path, lambda p: p.write_text(json.dumps(meta, indent=2, default=_json_default)))
        record("output", path, f"{self.profile}/{slug(model)}/{self.chapter}/{path.name}")
        record("output", meta_path, f"{self.profile}/{slug(model)}/{self.chapter}/{meta_path.name}")
        return path

    def figure_path(self, name: str, ext: str = "png") -> Path:
        return self.root / "figures" / self.chapter / f"{slug(name)}.{ext}"

    def figure(self, fig, name: str, caption: str, tab: str | None = None, alt: str | None = None) -> None:
        """Save a matplotlib figure as PNG (for the book) and PDF (for print), then show the PNG marked with its caption
        (MyST) and label (`figure_labels.label`), which the edition turns into a numbered figure (in `tab`'s tab, given a
        model's name: `tabs`); the figure is closed. `alt`: what the figure shows, for a reader who cannot see it (the
        effect and its numbers, not the caption again); without it the caption's text. The PNG's text entries tell the
        browser test the smallest text's size and where legends and axis texts lie (`plotting.SMALLEST_TEXT`, `TEXT_BOXES`)."""
        plotting.readable(fig)
        dpi = 150
        smallest = plotting.smallest_text_px(fig, dpi)
        entries = {"pdf": None, "png": ({plotting.SMALLEST_TEXT: f"{smallest:.1f}"} if smallest else {}) | {plotting.TEXT_BOXES: _text_boxes(fig, dpi)}}
        for ext in ("pdf", "png"):
            path = write_atomic(self.figure_path(name, ext), lambda p, e=ext: fig.savefig(p, format=e, dpi=dpi, bbox_inches="tight", metadata=entries[e]))
            record("output", path, f"{self.profile}/figures/{self.chapter}/{path.name}")
        plt.close(fig)
        png = base64.b64encode(self.figure_path(name, "png").read_bytes()).decode("ascii")
        vector = f"{self.profile}/figures/{self.chapter}/{self.figure_path(name, 'pdf').name}"  # the PDF book prints this file
        shown = {"name": figure_labels.label(self.chapter, name), "caption": caption, "pdf": vector} | ({"alt": alt} if alt else {})
        marks = {figure_labels.KEY: shown} | ({tabs.KEY: tab} if tab else {})
        display({"image/png": png}, raw=True, metadata=marks)
