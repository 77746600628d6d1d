"""The papers' reported numbers, for columns labelled "paper" beside the book's own results."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

_FILE = Path(__file__).with_name("paper_values.yaml")


@lru_cache(maxsize=1)
def values() -> dict[str, Any]:
    """All transcribed values, keyed by paper."""
    return yaml.safe_load(_FILE.read_text())


def table(paper: str, key: str) -> pd.DataFrame:
    """A list-valued entry as a DataFrame whose value columns are prefixed `paper_`."""
    frame = pd.DataFrame(values()[paper][key])
    return frame.rename(columns={c: f"paper_{c}" for c in frame.columns if c not in {"model"}})
