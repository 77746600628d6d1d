"""The gpu edition's deciding chapters (05 and 13) on one borrowed GPU, in one command, and their verdicts back here.

A borrowed GPU machine takes at most 64 MiB of working tree, reaches no package index and has no notebook tooling, so:

    python -m scripts.gpu_edition pack              # here: the data both chapters read and MiniLM in 16-bit, in .gpu/
    python3 -m scripts.gpu_edition run --out DIR    # there (or here with --scale): the chapters, packed into DIR
    python -m scripts.gpu_edition grade DIR         # here: results into results/gpu/, measured costs, the verdicts

`run` trains chapter 05's pre-training runs as one process each and chapter 13's fine-tuning grid in processes
sharing the GPU (`workers.gpu_slots`), both chapters side by side, each executed headless (`lib.edition.headless`);
DIR then holds one archive of the results, the logs, the run's facts (command, commit, device, times, the chapters'
code) and a manifest of every file's SHA-256 (at most 8 files come back from such a machine). `--scale F` runs the
profile's sizes times F and `-p NAME VALUE` changes a parameter: a smoke test, which `grade` puts in a folder of its own
(results/gpu-smoke/) and whose times are not recorded as costs.

`grade` takes only what `run` sent back, whole and unchanged (its manifest), of the gpu edition, computed with the code
and parameters this checkout gives chapters 05 and 13 (the parts of their cache key that are not the machine's:
`lib.edition.cache.key_parts`); it replaces those chapters' results in the edition's folder only, under the edition's
lock. A manifest catches a damaged or edited archive, not a forged one: one rewritten with new checksums passes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from lib.core.profiles import command_line_values, plan
from lib.core.sources import declared_parameters, source_file
from lib.edition import commit as checkout
from lib.edition import costs, work_ahead
from lib.edition.cache import key_parts
from lib.edition.folders import Edition
from lib.errors import BookError, cli, require
from lib.experiments.isotropy_calibration import grid_values
from lib.experiments.pretraining import pretraining_runs
from lib.io import sha256, write_atomic, write_folder_atomic
from lib.settings import REPO_ROOT, data_dir, results_dir, thread_env

CHAPTERS = ("05_pretraining", "13_isotropy_calibration")
PACK = REPO_ROOT / ".gpu"  # ignored by git (.gitignore); travels with `carry`
ARCHIVE = "gpu-edition.tar.gz"
FACTS, MANIFEST = "facts.json", "manifest.json"  # in the archive: what the run was, and every other file's SHA-256
SENT = ("results", "logs", FACTS)  # what the archive holds besides its manifest
MAX_BACK = 16 * 2**20  # the largest file a borrowed machine sends back
PROFILE = "gpu"  # the edition `grade` takes; a scaled or changed run of it is a smoke, graded into results/gpu-smoke
KEYED = ("source", "lib", "parameters")  # the parts of a chapter's cache key that are not the machine's
UNPACK_ERRORS = (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile)  # damaged, truncated, not one
TEXTS = ("profile", "command", "commit", "device", "torch", "cuda", "started", "finished")
FACT_TYPES = {**dict.fromkeys(TEXTS, str), "scale": (int, float), "parameters": list, "seconds_from_start": dict, "code": dict}  # what grade reads


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
        (staging / "COMMIT").write_text(checkout.commit()["commit"])
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
        _unpack(folder / "data.tar.xz", work / "data", "make the pack again (make gpu-pack) and carry it whole")
        env["BOOK_DATA_DIR"] = str(work / "data")
    if (folder / "minilm" / "config.json").is_file():
        env["BOOK_MINILM_DIR"] = str(folder / "minilm")
    return env


def _unpack(archive: Path, into: Path, remedy: str) -> None:
    """An archive's files into a folder; one line naming it when it is damaged, truncated or not an archive."""
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
    except UNPACK_ERRORS as err:
        why = (str(err).splitlines() or [""])[0].rstrip(":")  # a ReadError lists each method it tried on lines of their own
        raise BookError(f"{archive} is not a whole archive ({type(err).__name__}: {why}); {remedy}") from None


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=REPO_ROOT)


def _wait(training: list[subprocess.Popen], finetuning: subprocess.Popen) -> None:
    """Until every pre-training run has ended or one has failed; a failed chapter 13 ends the wait at once (a borrowed
    GPU's minutes are few)."""
    while any(p.poll() is None for p in training) and all(p.returncode in (None, 0) for p in training):
        require(finetuning.poll() in (None, 0), f"chapter {CHAPTERS[1]} failed; its log is in {ARCHIVE} (logs/{CHAPTERS[1]}.log)")
        time.sleep(1)


def run(out: Path, profile: str, scale: float, folder: Path, pairs: list[list[str]] | None = None) -> None:
    """Chapters 05 and 13 side by side; out/gpu-edition.tar.gz holds their results, logs, facts and manifest (the logs
    also when a chapter fails or the pack cannot be unpacked, so that a borrowed machine sends back what went wrong).
    `pairs`: `-p NAME VALUE`, each to the chapters that declare NAME (as the runner's), checked before anything starts."""
    pairs = pairs or []
    plans = dict(plan(profile, list(CHAPTERS), command_line_values(pairs), scale))
    changed = plans[CHAPTERS[0]]
    runs = list(pretraining_runs({**declared_parameters("05_pretraining"), **changed})[1])
    grid_values({**declared_parameters(CHAPTERS[1]), **plans[CHAPTERS[1]]})  # a bad task or method stops here, not on the GPU
    facts = run_facts(profile, scale, pairs, folder)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu-edition-"))
    logs, seconds, processes = work / "logs", facts["seconds_from_start"], []
    logs.mkdir()
    scaled = ["--scale", str(scale)] if scale != 1 else []
    given = {c: [a for name, value in pairs if name in declared_parameters(c) for a in ("-p", name, value)] for c in CHAPTERS}

    def chapter(name: str) -> subprocess.Popen:
        return _start(["-m", "lib.edition.headless", name, "--profile", profile, *scaled, *given[name]], env, logs / f"{name}.log")

    at = f" at scale {scale}" if scale != 1 else ""
    print(f"{profile} edition, chapters {', '.join(CHAPTERS)}{at} on {facts['device']}: {len(runs)} pre-training runs and chapter 13 side by side")
    start = time.time()
    try:
        env = _environment(work, folder)
        env |= thread_env(max(1, (os.cpu_count() or 1) // (len(runs) + 1)))  # the CPU's cores shared by the processes at once
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
        try:
            archive = send_back(work, facts, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        size = archive.stat().st_size
        print(f"{time.time() - start:.0f} s: {json.dumps(seconds)}; {archive} ({size / 2**20:.1f} MiB)")
    require(size <= MAX_BACK, f"{archive} is {size / 2**20:.1f} MiB, over the 16 MiB a borrowed machine sends back")


def code(profile: str, pairs: list[list[str]], scale: float) -> dict[str, dict[str, Any]]:
    """What chapters 05 and 13 compute with, by chapter: their source, the code of the lib modules they import and their
    parameters as planned here (`key_parts` but the packages and folders, which are the machine's)."""
    planned = plan(profile, list(CHAPTERS), command_line_values(pairs), scale)
    return {chapter: {part: value for part, value in key_parts(source_file(chapter), values).items() if part in KEYED} for chapter, values in planned}


def run_facts(profile: str, scale: float, pairs: list[list[str]], folder: Path) -> dict[str, Any]:
    """What a run records of itself as it starts: edition, scale and `-p` pairs, the command, the commit (the pack's, else
    this checkout's), the device as torch names it, versions, the chapters' code (`code`) and when it started."""
    args = ["--profile", profile, *(["--scale", str(scale)] if scale != 1 else []), *(a for pair in pairs for a in ("-p", *pair))]
    commit = (folder / "COMMIT").read_text().strip() if (folder / "COMMIT").is_file() else checkout.commit()["commit"]
    facts = {"profile": profile, "scale": scale, "parameters": pairs, "command": shlex.join(["python3", "-m", "scripts.gpu_edition", "run", *args])}
    facts |= {"commit": commit, "device": costs.device(), "python": sys.version.split()[0], **_versions(), "code": code(profile, pairs, scale)}
    return facts | {"started": checkout.now(), "seconds_from_start": {}}


def send_back(work: Path, facts: dict[str, Any], out: Path) -> Path:
    """work's results and logs with the facts (finished now) and a manifest of each file's SHA-256, as out/ARCHIVE."""
    (work / FACTS).write_text(json.dumps({**facts, "finished": checkout.now()}, indent=1))
    files = sorted(p for p in work.rglob("*") if p.is_file() and p.relative_to(work).parts[0] in SENT)
    listed = {p.relative_to(work).as_posix(): sha256(p) for p in files}
    (work / MANIFEST).write_text(json.dumps({"files": listed}, indent=1))
    return write_atomic(out / ARCHIVE, lambda p: _archive(p, work))


def _versions() -> dict[str, str]:
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__, "cuda": str(torch.version.cuda)}


def _archive(path: Path, work: Path) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for part in (*SENT, MANIFEST):
            if (work / part).exists():
                tar.add(work / part, arcname=part)


def grade(source: Path) -> None:
    """Check a run's archive (`_checked`); put its chapters' results into the gpu edition's results folder (a smoke run's
    into results/gpu-smoke), under that edition's lock; record a full-size run's seconds as the edition's measured costs;
    print where, when and at what scale it was computed and the verdicts of the claims these chapters decide."""
    from lib.experiments import scorecard

    archive = source / ARCHIVE if source.is_dir() else source
    require(archive.is_file(), f"{archive}: no such archive; give the folder `run --out` wrote (or the {ARCHIVE} in it)")
    with tempfile.TemporaryDirectory() as tmp:
        facts = _checked(archive, Path(tmp))
        smoke = facts["scale"] != 1 or bool(facts["parameters"])
        edition = f"{PROFILE}-smoke" if smoke else PROFILE
        here = checkout.commit()["commit"]
        changes = f" with {' '.join(f'-p {name} {value}' for name, value in facts['parameters'])}" if facts["parameters"] else ""
        what = f"a SMOKE RUN of its chapters 05 and 13 at scale {facts['scale']}{changes}" if smoke else "its chapters 05 and 13 at full scale"
        print(f"{archive}: the {PROFILE} edition, {what}, computed on {facts['device']} (torch {facts['torch']}, CUDA {facts['cuda']})")
        same = f"; this checkout is at commit {here[:7]}, with the same code and parameters for these chapters" if here != facts["commit"] else ""
        print(f"  at commit {facts['commit'][:7]}, from {facts['started']} to {facts['finished']} ({facts['command']}){same}")
        with Edition(edition).locked(f"python -m scripts.gpu_edition grade {archive}"):
            _replace(Path(tmp) / "results" / PROFILE, results_dir() / edition)
            if not smoke:
                where = f"commit {facts['commit'][:7]}, {facts['device']}, run {facts['started'][:10]}, 05 and 13 side by side (scripts/gpu_edition.py)"
                for chapter in CHAPTERS:
                    costs.record(PROFILE, chapter, facts["seconds_from_start"][chapter], where)
    print(f"results of chapters 05 and 13 are in {results_dir() / edition}")
    if smoke:
        print(f"a smoke run: not the {PROFILE} edition's results, and its times are not recorded as costs")
    else:
        print(f"measured seconds recorded in {costs.measured_path(PROFILE)} (make costs PROFILE={PROFILE} commits them): {facts['seconds_from_start']}")
    print(f"verdicts of this smoke run (scale {facts['scale']}), not the {PROFILE} edition's:" if smoke else f"verdicts of the {PROFILE} edition:")
    card = scorecard.scorecard(edition)
    for row in card[card["chapter"].isin(CHAPTERS)].itertuples():
        print(f"{row.verdict:>14}  {row.claim} ({row.model})\n{'':>16}{row.ours}")


def _checked(archive: Path, into: Path) -> dict[str, Any]:
    """The facts of a run's archive, unpacked into `into`, once checked: a whole archive whose files are those of its
    manifest, of a run that did not fail, of the gpu edition's chapters 05 and 13 only, computed with this checkout's
    code and parameters for them (`code`). One line naming the archive and what is wrong otherwise."""
    again = "grade only the archive `run --out` wrote, copied whole, or run it again"
    _unpack(archive, into, again)
    try:
        listed = json.loads((into / MANIFEST).read_text(encoding="utf-8"))["files"]
    except FileNotFoundError:
        raise BookError(f"{archive} holds no {MANIFEST}, so its files cannot be checked; {again} (with this checkout's scripts/gpu_edition.py)") from None
    except (OSError, ValueError, KeyError, TypeError):
        listed = None
    require(isinstance(listed, dict), f"{archive}: its {MANIFEST} is not a list of files and their SHA-256; {again}")
    present = {p.relative_to(into).as_posix() for p in into.rglob("*") if p.is_file()} - {MANIFEST}
    for name in sorted(present ^ set(listed)):
        require(name in present, f"{archive}: {name}, listed in its {MANIFEST}, is missing; {again}")
        raise BookError(f"{archive}: {name} is not in its {MANIFEST}, so it cannot be checked; {again}")
    for name, digest in sorted(listed.items()):
        changed = f"{archive}: {name} is not the file `run` wrote (its SHA-256 differs from the one in {MANIFEST})"
        require(sha256(into / name) == digest, f"{changed}: the archive was changed after it was made; {again}")
    facts = _facts(archive, into, again)
    sent = into / "results" / PROFILE
    stray = [p for p in (into / "results").glob("*") if p.name != PROFILE] + [p for p in sent.glob("*/*") if p.name not in CHAPTERS]
    stray += [p for p in sent.glob("*") if not p.is_dir()]
    if stray:
        where = f"results/{PROFILE}/<model>/<chapter>"
        raise BookError(f"{archive} holds {stray[0].relative_to(into)}, not chapters 05 and 13's results in {where}; nothing was written: run it again")
    try:
        ours = code(facts["profile"], facts["parameters"], facts["scale"])
    except BookError as err:
        raise BookError(f"{archive}: its parameters do not apply to this checkout's chapters 05 and 13 ({err}); make the pack here and run it again") from None
    changed = [f"{chapter} {name}" for chapter in CHAPTERS for name in _differences(facts["code"].get(chapter), ours[chapter])]
    if changed:
        more = f" and {len(changed) - 4} more" if len(changed) > 4 else ""
        raise BookError(
            f"{archive} was computed at commit {facts['commit'][:7]} with other code or parameters for chapters 05 and 13 than this checkout's "
            f"(commit {checkout.commit()['commit'][:7]}): {', '.join(changed[:4])}{more}; grade it in a checkout of its commit, or make the pack here "
            "and run it again (make gpu-pack, then python3 -m scripts.gpu_edition run --out DIR there)"
        )
    return facts


def _facts(archive: Path, into: Path, again: str) -> dict[str, Any]:
    """The archive's facts.json, checked: a run that did not fail, of the gpu edition, every fact `grade` reads there."""
    try:
        facts = json.loads((into / FACTS).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BookError(f"{archive} holds no {FACTS}, so what it ran is unknown; {again}") from None
    except (OSError, ValueError):
        facts = None
    require(isinstance(facts, dict), f"{archive}: its {FACTS} is not a JSON object of the run's facts; {again}")
    require("failed" not in facts, f"{archive}: that run failed ({facts.get('failed')}); its logs are in the archive's logs/")
    for key, kind in FACT_TYPES.items():
        require(isinstance(facts.get(key), kind), f"{archive}: its {FACTS} has no {key!r} of the kind `run` writes; {again}")
    only = f"grade takes only the {PROFILE} edition's runs (run --profile {PROFILE}) and writes only its results, so nothing was written"
    require(facts["profile"] == PROFILE, f"{archive} is a run of the {facts['profile']} edition; {only}")
    require(0 < facts["scale"] <= 1, f"{archive}: its scale {facts['scale']} is not in (0, 1], so it is not a run of `run`; run it again")
    pairs_ok = all(isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, str) for v in pair) for pair in facts["parameters"])
    require(pairs_ok, f"{archive}: its -p pairs are not NAME VALUE; {again}")
    times = facts["seconds_from_start"]
    require(all(isinstance(times.get(c), (int, float)) for c in CHAPTERS), f"{archive}: its {FACTS} lacks the seconds of a chapter; run it again")
    return facts


def _differences(old: object, new: dict[str, Any]) -> list[str]:
    """What differs between an archive's record of a chapter's code (`code`) and this checkout's: `source`, a lib file,
    `parameter <name>`."""
    if not isinstance(old, dict):
        return ["(none recorded)"]
    out = ["source"] if old.get("source") != new["source"] else []
    for part, label in (("lib", ""), ("parameters", "parameter ")):
        theirs = old.get(part) if isinstance(old.get(part), dict) else {}
        out += [f"{label}{name}" for name in sorted(set(theirs) | set(new[part])) if theirs.get(name) != new[part].get(name)]
    return out


def _replace(new: Path, folder: Path) -> None:
    """Chapters 05 and 13's results in an edition's results folder (`<model>/<chapter>/`) replaced, each folder at once,
    by those in new; the other chapters' stay."""
    for old in folder.glob("*/*"):
        if old.name in CHAPTERS and not (new / old.relative_to(folder)).is_dir():
            shutil.rmtree(old)
    for part in sorted(new.glob("*/*")):
        write_folder_atomic(folder / part.relative_to(new), lambda tmp, part=part: shutil.copytree(part, tmp, dirs_exist_ok=True))


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
    g = verbs.add_parser("grade", help="a run's archive checked, its results into results/gpu (a smoke's into results/gpu-smoke), the verdicts")
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
