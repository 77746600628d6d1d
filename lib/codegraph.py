"""What code a cached thing depends on, read from the import statements of `lib`: a chapter's source, a trained
model, a fine-tuning run or a file of features is keyed by the code of every `lib` file its computation runs (comments,
docstrings and layout left out: `codehash`). One mechanism for all of them: editing a file re-computes exactly what
imports it, directly or through other `lib` modules."""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
from pathlib import Path

from .codehash import code_digest, without_docstrings
from .errors import require
from .settings import REPO_ROOT


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


def rules_digest(modules: list[Path], root: Path = REPO_ROOT) -> dict[str, str]:
    """What the scorecard's verdicts depend on in the chapters' experiment modules: their rules and table schemas, the
    top-level definitions those use (followed into other lib modules name by name), and whole lib modules they use as
    modules (`inference.mean_t`), with what those import. A figure or run function that no rule uses is not part of
    it, so editing one executes its chapter, not the scorecard. By file (`path` or `path:names`) -> digest."""
    parsed: dict[Path, tuple[dict, dict]] = {}
    todo = []
    for path in modules:
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


def digest(module: str, root: Path = REPO_ROOT) -> str:
    """The code digest of a `lib` module (`lib.train.masked_lm`) and of every `lib` file importing it runs (its import
    closure, package `__init__` files included), by path under root: what a result it computes depends on. Computed
    once per state of the files (their sizes and times), so keying many runs costs one reading."""
    require(_module_file(module, root) is not None, f"no module {module} under {root}")
    state = tuple(sorted((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in (root / "lib").rglob("*.py")))
    return _digest(module, root, state)


@functools.lru_cache(maxsize=64)
def _digest(module: str, root: Path, state: tuple) -> str:
    files = lib_dependencies(f"import {module}\n", root)
    text = "".join(f"{p.relative_to(root).as_posix()} {code_digest(p.read_text(encoding='utf-8'))}\n" for p in files)
    return hashlib.sha256(text.encode()).hexdigest()
