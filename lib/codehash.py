"""Digests of Python code, not of its bytes: comments, docstrings and layout do not count. Cached results (chapter
executions, fine-tuning runs, pre-trained models) are keyed by the code that computed them."""

from __future__ import annotations

import ast
import copy
import hashlib


def without_docstrings(tree: ast.AST) -> ast.AST:
    """A copy of a syntax tree without its docstrings."""
    tree = copy.deepcopy(tree)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def code_digest(text: str) -> str:
    """SHA-256 of a Python file's code: its syntax tree without docstrings, so comments, docstrings and layout do not
    count."""
    return hashlib.sha256(ast.dump(without_docstrings(ast.parse(text)), include_attributes=False).encode()).hexdigest()
