"""`make gpu-check` at tiny sizes on this CPU: every step runs and its table says what it measured."""

import subprocess
import sys

import pandas as pd

from lib.settings import REPO_ROOT


def test_gpu_check_runs_every_step_at_tiny_sizes(tmp_path, shared_data):  # its chapter 05 step pre-trains on the corpus
    out = tmp_path / "check.csv"
    done = subprocess.run(
        [sys.executable, "-m", "scripts.gpu_check", "--tiny", "--out", str(out), "--cpu-table", str(tmp_path / "none.csv")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    table = pd.read_csv(out).set_index("check")
    assert not table["result"].str.startswith("failed").any(), table["result"].to_dict()
    assert table.loc["chapter 05 default runs", "value"] > 0  # the mean perplexity ratio without/with PE over seeds
    assert "2 runs" in table.loc["chapter 05 default runs", "result"]
    assert "no CPU edition table" in table.loc["chapter 05 default runs", "reference"]
    for precision in ("bf16 autocast", "float32"):
        assert table.loc[f"paper-scale pre-training, {precision}", "value"] > 0  # tokens/s
    assert (table.filter(like="extraction lib/bare", axis=0)["value"] > 0).all() and len(table.filter(like="extraction", axis=0)) == 2
    tests = table.filter(like="lib tests", axis=0).iloc[0]
    assert tests["passed"] and tests["value"] > 0 and "passed" in tests["result"]  # pytest's own count
    assert table.loc["torchrun, 1 process (gloo)", "passed"]
    assert set(table["device"]) == {table["device"].iloc[0]} and table["device"].iloc[0].startswith("CPU")
