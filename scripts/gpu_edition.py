"""The gpu edition's deciding chapters (05 and 13) on one borrowed GPU, in one command, and their verdicts back here.

A borrowed GPU machine takes at most 64 MiB of working tree, reaches no package index and has no notebook tooling, so:

    python -m scripts.gpu_edition pack              # here: the data both chapters read and MiniLM in 16-bit, in .gpu/
    python3 -m scripts.gpu_edition run --out DIR    # there (or here with --scale): the chapters, packed into DIR
    python -m scripts.gpu_edition grade DIR         # here: results into results/, measured costs, the verdicts

`run` trains chapter 05's pre-training runs as one process each and chapter 13's fine-tuning grid in processes
sharing the GPU (`workers.gpu_slots`), both chapters side by side, each executed headless (`lib.edition.headless`);
DIR then holds one archive of the results, the logs and the measured seconds (at most 8 files come back from such a
machine). `--scale F` runs the profile's sizes times F and `-p NAME VALUE` changes a parameter (a CPU smoke test; the
times of either are not recorded as costs).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from lib.core.profiles import command_line_values, plan
from lib.core.sources import declared_parameters
from lib.edition import costs, work_ahead
from lib.errors import BookError, cli, require
from lib.experiments.isotropy_calibration import grid_values
from lib.experiments.pretraining import pretraining_runs
from lib.io import write_atomic
from lib.settings import REPO_ROOT, data_dir, results_dir, thread_env

CHAPTERS = ("05_pretraining", "13_isotropy_calibration")
PACK = REPO_ROOT / ".gpu"  # ignored by git (.gitignore); travels with `carry`
ARCHIVE = "gpu-edition.tar.gz"
MAX_BACK = 16 * 2**20  # the largest file a borrowed machine sends back


def data_sets() -> list[str]:
    """The registered data sets chapters 05 and 13 read: the pre-training corpus, SST-2 (chapter 05's outlier analysis)
    and the GLUE tasks."""
    from lib.datasets.tasks import GLUE_TASKS

    return list(dict.fromkeys(["corpus", "sst2", *GLUE_TASKS]))


def pack(folder: Path) -> None:
    """The data sets (as one xz archive) and all-MiniLM-L6-v2 in float16 into folder, replaced whole."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from lib.datasets.registry import dataset, verified_path
    from lib.encode.models import minilm_path

    def write(staging: Path) -> None:
        with tarfile.open(staging / "data.tar.xz", "w:xz") as tar:
            for name in data_sets():
                for split, spec in dataset(name).files.items():
                    tar.add(verified_path(name, split), arcname=spec.path)
        source = minilm_path()
        model = AutoModel.from_pretrained(source, dtype=torch.float16)
        model.save_pretrained(staging / "minilm")
        AutoTokenizer.from_pretrained(source).save_pretrained(staging / "minilm")
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPO_ROOT).stdout.strip()
        (staging / "COMMIT").write_text(commit or "unknown")
        (staging / "minilm" / "PRECISION").write_text(f"float16 copy of {source.name} from {source}: weights rounded to 16 bits\n")

    staging = Path(tempfile.mkdtemp(prefix=".gpu-", dir=folder.parent))
    try:
        write(staging)
        shutil.rmtree(folder, ignore_errors=True)  # the old pack goes only once the new one is whole
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"packed {', '.join(data_sets())} and MiniLM (float16) into {folder}: {size / 2**20:.1f} MiB")


def _environment(work: Path, folder: Path) -> dict[str, str]:
    """Where the chapters read and write on the borrowed machine: everything under work, data and MiniLM from folder."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg"}
    env |= {"BOOK_RESULTS_DIR": str(work / "results"), "BOOK_MODELS_DIR": str(work / "models"), "BOOK_CACHE_DIR": str(work / "cache")}
    if (folder / "data.tar.xz").is_file():
        with tarfile.open(folder / "data.tar.xz") as tar:
            tar.extractall(work / "data", filter="data")
        env["BOOK_DATA_DIR"] = str(work / "data")
    if (folder / "minilm" / "config.json").is_file():
        env["BOOK_MINILM_DIR"] = str(folder / "minilm")
    return env


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=REPO_ROOT)


def _wait(training: list[subprocess.Popen], finetuning: subprocess.Popen) -> None:
    """Until every pre-training run has ended or one has failed; a failed chapter 13 ends the wait at once (a borrowed
    GPU's minutes are few)."""
    while any(p.poll() is None for p in training) and all(p.returncode in (None, 0) for p in training):
        require(finetuning.poll() in (None, 0), f"chapter {CHAPTERS[1]} failed; its log is in {ARCHIVE} (logs/{CHAPTERS[1]}.log)")
        time.sleep(1)


def run(out: Path, profile: str, scale: float, folder: Path, pairs: list[list[str]] | None = None) -> None:
    """Chapters 05 and 13 side by side; out/gpu-edition.tar.gz holds their results, logs and seconds (the logs also
    when a chapter fails, so that a borrowed machine sends back what went wrong). `pairs`: `-p NAME VALUE`, each to
    the chapters that declare NAME (as the runner's), checked before anything starts."""
    pairs = pairs or []
    plans = dict(plan(profile, list(CHAPTERS), command_line_values(pairs), scale))
    changed = plans[CHAPTERS[0]]
    runs = list(pretraining_runs({**declared_parameters("05_pretraining"), **changed})[1])
    grid_values({**declared_parameters(CHAPTERS[1]), **plans[CHAPTERS[1]]})  # a bad task or method stops here, not on the GPU
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu-edition-"))
    env, logs = _environment(work, folder), work / "logs"
    logs.mkdir()
    scaled = ["--scale", str(scale)] if scale != 1 else []
    given = {c: [a for name, value in pairs if name in declared_parameters(c) for a in ("-p", name, value)] for c in CHAPTERS}

    def chapter(name: str) -> subprocess.Popen:
        return _start(["-m", "lib.edition.headless", name, "--profile", profile, *scaled, *given[name]], env, logs / f"{name}.log")

    env |= thread_env(max(1, (os.cpu_count() or 1) // (len(runs) + 1)))  # the CPU's cores shared by the processes at once
    start, seconds, processes = time.time(), {}, []
    facts = {"profile": profile, "scale": scale, "parameters": pairs, "seconds_from_start": seconds, "device": costs.device(), "python": sys.version.split()[0]}
    facts |= _versions() | {"commit": (folder / "COMMIT").read_text().strip() if (folder / "COMMIT").is_file() else "unknown"}
    at = f" at scale {scale}" if scale != 1 else ""
    print(f"{profile} edition, chapters {', '.join(CHAPTERS)}{at} on {facts['device']}: {len(runs)} pre-training runs and chapter 13 side by side")
    try:
        processes.append(chapter(CHAPTERS[1]))
        command = work_ahead.command("lib.edition.train_ahead", profile, changed)[1:]  # as a build trains them ahead of chapter 05
        training = [_start([*command, "--only", name], env, logs / f"pretraining-{name}.log") for name in runs]
        processes += training
        _wait(training, processes[0])
        failed = [name for name, p in zip(runs, training) if p.returncode not in (None, 0)]
        if failed:
            raise BookError(f"pre-training {', '.join(failed)} failed; its log is in {ARCHIVE} (logs/pretraining-{failed[0]}.log)")
        seconds["05_pretraining (training)"] = round(time.time() - start, 1)
        processes.append(chapter(CHAPTERS[0]))
        for name, process in ((CHAPTERS[0], processes[-1]), (CHAPTERS[1], processes[0])):
            require(process.wait() == 0, f"chapter {name} failed; its log is in {ARCHIVE} (logs/{name}.log)")
            seconds[name] = round(time.time() - start, 1)
    except BaseException as err:
        facts["failed"] = str(err) or type(err).__name__
        raise
    finally:
        for process in processes:
            if process.poll() is None:  # a chapter still running when another failed or the run was interrupted
                process.kill()
        (work / "facts.json").write_text(json.dumps(facts, indent=1))
        archive = write_atomic(out / ARCHIVE, lambda p: _archive(p, work))
        shutil.rmtree(work, ignore_errors=True)
        size = archive.stat().st_size
        print(f"{time.time() - start:.0f} s: {json.dumps(seconds)}; {archive} ({size / 2**20:.1f} MiB)")
    require(size <= MAX_BACK, f"{archive} is {size / 2**20:.1f} MiB, over the 16 MiB a borrowed machine sends back")


def _versions() -> dict[str, str]:
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__, "cuda": str(torch.version.cuda)}


def _archive(path: Path, work: Path) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for part in ("results", "logs", "facts.json"):
            if (work / part).exists():
                tar.add(work / part, arcname=part)


def grade(source: Path) -> None:
    """Unpack a run's archive into results/ (its profile's folder replaced), record its measured seconds in the
    profile's costs (a full-size run only) and print the verdicts of the claims these chapters decide."""
    from lib.experiments import scorecard

    archive = source / ARCHIVE if source.is_dir() else source
    require(archive.is_file(), f"{archive}: no such archive; give the folder `run --out` wrote (or the {ARCHIVE} in it)")
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        facts = json.loads((Path(tmp) / "facts.json").read_text())
        require("failed" not in facts, f"{archive}: that run failed ({facts.get('failed')}); its logs are in the archive's logs/")
        profile = facts["profile"]
        for item in (Path(tmp) / "results").iterdir():
            target = results_dir() / item.name
            shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
            shutil.copytree(item, target) if item.is_dir() else shutil.copy2(item, target)
    print(f"results of the {profile} edition ({facts['device']}, torch {facts['torch']}) are in {results_dir()}")
    if facts["scale"] == 1 and not facts.get("parameters"):  # the profile's own sizes: its measured costs
        for chapter in CHAPTERS:
            where = f"commit {facts['commit'][:7]}, {facts['device']}, chapters 05 and 13 side by side (scripts/gpu_edition.py)"
            costs.record(profile, chapter, facts["seconds_from_start"][chapter], where)
        print(f"measured seconds recorded in {costs.measured_path(profile)} (make costs PROFILE={profile} commits them): {facts['seconds_from_start']}")
    card = scorecard.scorecard(profile)
    for row in card[card["chapter"].isin(CHAPTERS)].itertuples():
        print(f"{row.verdict:>14}  {row.claim} ({row.model})\n{'':>16}{row.ours}")


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.gpu_edition", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("pack", help="the data and MiniLM (float16) into .gpu/ (carry it to the GPU machine)")
    p.add_argument("--folder", type=Path, default=PACK)
    r = verbs.add_parser("run", help="chapters 05 and 13 side by side; their results packed into --out")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--profile", default="gpu")
    r.add_argument("--scale", type=float, default=1.0, help="the profile's sizes times this (0-1]: a smoke test")
    r.add_argument("--folder", type=Path, default=PACK, help="what `pack` wrote (else the data folder and packages here)")
    r.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help="a chapter parameter (VALUE is YAML)")
    g = verbs.add_parser("grade", help="results of a run into results/, and the verdicts")
    g.add_argument("source", type=Path)
    args = parser.parse_args(argv)
    if args.verb == "pack":
        data_dir()
        pack(args.folder)
    elif args.verb == "run":
        run(args.out, args.profile, args.scale, args.folder, args.parameter)
    else:
        grade(args.source)


if __name__ == "__main__":
    main()
