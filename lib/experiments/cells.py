"""How a number is printed in a table cell: the chapters' tables and the experiment modules' views of them share these."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .wording import rounded


def cell_text(value: object, precision: int) -> str:
    """One cell as printed: numbers with `precision` decimals (whole numbers without; never "-0.000"), booleans as ✓ / ✗,
    missing as –. A hyphen before a digit does not break ("GPT-2", "Figs. 3.11-3.12"); spaces inside a short cell with a
    number do not either, except before "±" and in an interval ("82.31 (6)" stays whole, "91.44 ± 0.52" breaks only
    before ±, "0.102 (0.065 to 0.103)" where its words do); words break as text does."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "✓" if value else "✗"
    if isinstance(value, (int, np.integer)):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, (float, np.floating)):
        return f"{value:,.{precision}f}" if abs(value) >= 10_000 else rounded(float(value), precision)
    text = re.sub(r"(?<=\w)-(?=\d)", "\u2011", str(value))
    if len(text) > 24 or " to " in text or not any(c.isdigit() for c in text):
        return text
    return text.replace(" ", "\u00a0").replace("\u00a0±\u00a0", " ±\u00a0")


def annotated(values: pd.Series, notes: pd.Series, precision: int = 3, unit: str = "") -> pd.Series:
    """Cells "value (note)", e.g. a contribution with its rank, "0.050 (204)", or a dimension with its share, "267 (7.9%)"
    (`unit` follows the note); a missing value prints "–"."""

    def one(v: object, n: object) -> str:
        return "–" if pd.isna(v) else f"{cell_text(v, precision)} ({cell_text(n, 1)}{unit})"

    return pd.Series([one(v, n) for v, n in zip(values, notes)], index=values.index)


def plus_minus(mean: pd.Series, std: pd.Series, precision: int = 2) -> pd.Series:
    """Cells "mean ± std" (a narrow column breaks them before ±); "–" for a missing mean or spread."""

    def one(m: float, s: float) -> str:
        return "–" if pd.isna(m) else f"{m:.{precision}f} ± " + ("–" if pd.isna(s) else f"{s:.{precision}f}")

    return pd.Series([one(m, s) for m, s in zip(mean, std)], index=mean.index)
