"""Compare two results trees table by table, e.g. before and after a refactor that must not change any number.

    python scripts/compare_results.py OLD_RESULTS NEW_RESULTS [--profile quick]

Every CSV under either tree is listed as `identical` (same bytes), `missing` on one side, or `differs`, with the
columns that differ and the largest absolute difference of each numeric one (rows are matched by their key columns
when a table holds the same rows in another order). Columns that hold wall-clock times
(they differ between any two runs) are reported apart. Exits with status 1 when a non-timing column differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

TIMING = {"seconds", "training_minutes", "seconds_per_epoch", "time_ratio"}


def _keys(old: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    """The columns that name a row (not floats) on both sides."""
    return [c for c in old.columns if c in new.columns and not pd.api.types.is_float_dtype(old[c])]


def differing_columns(old: pd.DataFrame, new: pd.DataFrame) -> dict[str, str]:
    """Column -> how it differs (largest absolute difference for numbers). Tables with different numbers of rows are
    compared on the rows they share (matched by their key columns), and the row counts are reported."""
    out = {}
    if len(old) != len(new):
        out["rows"] = f"{len(old)} old, {len(new)} new"
        keys = _keys(old, new)
        if not keys:
            return out
        shared = old[keys].astype(str).merge(new[keys].astype(str).drop_duplicates(), how="inner").drop_duplicates()
        pick = lambda t: t.assign(_k=t[keys].astype(str).agg("|".join, axis=1)).set_index("_k")
        index = shared.astype(str).agg("|".join, axis=1)
        old, new = pick(old).loc[index].reset_index(drop=True), pick(new).loc[index].reset_index(drop=True)
        out["rows"] += f", {len(index)} shared"
    for column in sorted(set(old.columns) | set(new.columns)):
        if column not in old or column not in new:
            out[column] = "only on one side"
            continue
        a, b = old[column], new[column]
        if a.equals(b):
            continue
        if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
            out[column] = f"max |diff| {float((a.astype(float) - b.astype(float)).abs().max()):.3g}"
        else:
            out[column] = f"{int((a.astype(str) != b.astype(str)).sum())} cells differ"
    return out


def aligned(old: pd.DataFrame, new: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two tables with their rows in the same order when they hold the same rows in another order: both sorted by
    their non-float columns (the keys, e.g. variant and layer), if those are the same on both sides."""
    keys = _keys(old, new)
    if not keys or len(old) != len(new):
        return old, new
    a, b = (t.sort_values(keys, kind="stable").reset_index(drop=True) for t in (old, new))
    return (a, b) if a[keys].astype(str).equals(b[keys].astype(str)) else (old, new)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--profile", default="", help="compare only results/<profile>/")
    args = parser.parse_args()
    old_root, new_root = args.old / args.profile, args.new / args.profile
    names = sorted({p.relative_to(old_root) for p in old_root.rglob("*.csv")} | {p.relative_to(new_root) for p in new_root.rglob("*.csv")})
    counts, failed = {"identical": 0, "timing only": 0, "differs": 0, "missing": 0}, False
    for name in names:
        a, b = old_root / name, new_root / name
        if not a.exists() or not b.exists():
            counts["missing"] += 1
            failed = True
            print(f"missing   {name} (only in {'new' if b.exists() else 'old'})")
            continue
        if a.read_bytes() == b.read_bytes():
            counts["identical"] += 1
            continue
        diff = differing_columns(*aligned(pd.read_csv(a), pd.read_csv(b)))
        real = {c: d for c, d in diff.items() if c not in TIMING}
        kind = "differs" if real or not diff else "timing only"
        counts[kind] += 1
        failed |= kind == "differs"
        print(f"{kind:9s} {name}: " + ("; ".join(f"{c}: {d}" for c, d in diff.items()) or "same values, different text"))
    print(f"{len(names)} tables: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
