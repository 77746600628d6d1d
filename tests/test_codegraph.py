"""One mechanism says what code a cached thing depends on: the import closure that keys chapters also keys trained
models, fine-tuning runs and features. Edits are made in a copy of lib."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lib import codegraph
from lib.settings import REPO_ROOT

KEY = """
from lib.train.masked_lm import PretrainConfig
from tests.test_masked_lm import TINY
print(PretrainConfig(**TINY).key())
"""


@pytest.fixture
def tree(tmp_path) -> Path:
    shutil.copytree(REPO_ROOT / "lib", tmp_path / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _append(root: Path, file: str, text: str) -> None:
    path = root / file
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _model_key(root: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "BOOK_LIB_ROOT"} | {"PYTHONPATH": os.pathsep.join([str(root), str(REPO_ROOT)])}
    done = subprocess.run([sys.executable, "-c", KEY], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_changing_how_blocks_are_packed_changes_the_trained_models_key(tree):
    before = _model_key(tree)
    _append(tree, "lib/train/shards.py", "\n# a comment, and a docstring below, are not code\n")
    assert _model_key(tree) == before
    _append(tree, "lib/train/shards.py", "\n\ndef _planted() -> int:\n    return 1\n")
    assert _model_key(tree) != before


@pytest.mark.parametrize(
    ("module", "edited", "changes"),
    [
        ("lib.train.finetune", "lib/train/calibration.py", True),  # a calibration loss: fine-tuning runs again
        ("lib.encode.features", "lib/encode/collectors.py", True),  # how vectors are pooled: features extracted again
        ("lib.train.masked_lm", "lib/train/shards.py", True),
        ("lib.train.masked_lm", "lib/experiments/sts.py", False),  # a chapter's module: no model trained again
        ("lib.train.finetune", "lib/train/shards.py", False),
    ],
)
def test_a_key_changes_with_the_code_its_computation_runs_and_only_that(tree, module, edited, changes):
    before = codegraph.digest(module, tree)
    _append(tree, edited, "\n\ndef _planted() -> int:\n    return 1\n")
    assert (codegraph.digest(module, tree) != before) is changes


def test_the_keys_use_the_import_closure():
    """Each keyed computation names itself: its module's closure, not a hand-made list of files."""
    closure = {p.name for p in codegraph.lib_dependencies("import lib.train.masked_lm\n")}
    assert {"shards.py", "distributed.py", "bpe.py", "collectors.py", "outliers.py", "extraction.py"} <= closure
    with pytest.raises(Exception, match="no module lib.train.nothing"):
        codegraph.digest("lib.train.nothing")
