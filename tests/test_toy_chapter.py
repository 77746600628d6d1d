"""A new chapter is three files: its notebook, its experiment module and a line in `_toc.yml`. The toy chapter below
is added to a copy of the repository that way, and every part of the build that looks chapters up finds it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import yaml

from lib.settings import REPO_ROOT

NOTEBOOK = """# %% [markdown]
# # A toy chapter

# %% tags=["parameters"]
profile = "default"  # the edition
n = 3  # how many rows
kind = "plain"  # what the rows hold

# %%
import pandas as pd

from lib.book.results import Results
from lib.experiments import toy

Results("15_toy", profile).table(pd.DataFrame({"row": range(n)}), toy.ROWS, "m", {"n": n})
"""

MODULE = '''"""A toy chapter's module."""

from __future__ import annotations

from ..core.declaration import chapter
from . import outlier_set

CHAPTER = chapter("15_toy", reads=(outlier_set.CHAPTER,), allowed={"kind": "plain or fancy"})
ROWS = CHAPTER.table("rows", "row")


@CHAPTER.rule
def rows_exist(tables, model, claim):
    return None
'''

CHECK = """
import json
from lib.core.profiles import plan
from lib.core.sources import chapters
from lib.edition import cache, reference
from lib.experiments import declaration, rules, schemas

print(json.dumps({
    "chapters": chapters(),
    "declared": declaration("15_toy").name,
    "schemas": sorted(schemas("15_toy")),
    "rules": sorted(rules("15_toy")),
    "reads": sorted(cache.prerequisites("15_toy", {})),
    "scorecard_reads_it": "15_toy" in cache.prerequisites("14_scorecard", {}),
    "allowed": {r["parameter"]: r["allowed"] for r in reference.reference("15_toy")},
    "planned": plan("quick", ["15_toy"], {})[0][1],
}))
"""


def test_a_chapter_added_as_notebook_module_and_toc_line_is_found_everywhere(tmp_path):
    for folder in ("lib", "notebooks", "profiles"):
        shutil.copytree(REPO_ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "notebooks" / "15_toy.py").write_text(NOTEBOOK, encoding="utf-8")
    (tmp_path / "lib" / "experiments" / "toy.py").write_text(MODULE, encoding="utf-8")
    toc = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text(encoding="utf-8"))
    toc["parts"][0]["chapters"].append({"file": "book/chapters/15_toy"})
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOOK_") or k == "BOOK_DATA_DIR"} | {"PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert "15_toy" in found["chapters"] and found["declared"] == "15_toy"
    assert found["schemas"] == ["rows"] and found["rules"] == ["rows_exist"]
    assert found["reads"] == ["02_outlier_neurons"] and found["scorecard_reads_it"]  # the build orders it
    assert found["allowed"]["kind"] == "plain or fancy" and found["planned"] == {"profile": "quick"}  # no profile entry needed


def test_the_readme_names_exactly_the_three_files_of_a_new_chapter():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    bullet = readme.split("- **Add a chapter**:", 1)[1].split("\n- **", 1)[0]
    first = bullet.split(". The module", 1)[0]  # the sentence that lists what to add
    assert set(re.findall(r"`([^`]+\.(?:py|yml))`", first)) == {"notebooks/NN_name.py", "lib/experiments/name.py", "_toc.yml"}


def test_every_chapter_has_a_module_of_its_name_that_declares_it():
    from lib.core.sources import chapters
    from lib.experiments import declaration

    assert all(declaration(c) is not None and declaration(c).name == c for c in chapters())


def test_a_module_that_reads_chapter_02s_outlier_set_declares_it():
    """Reading the outlier set reads chapter 02's results: a chapter whose code imports it must declare so, or a
    parallel build could run it before chapter 02 (the declaration replaced an import scan)."""
    from lib import codegraph
    from lib.core.sources import chapters, source_file
    from lib.edition import cache

    for chapter in chapters():
        files = {p.name for p in codegraph.lib_dependencies(source_file(chapter).read_text(encoding="utf-8"))}
        if "outlier_set.py" in files and chapter != "02_outlier_neurons":
            assert "02_outlier_neurons" in cache.prerequisites(chapter, {}), chapter
