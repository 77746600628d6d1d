"""Execute one chapter: its notebook run by papermill with its parameters, its results written to a folder of its own
and published with its executed notebook and cache entry only when it succeeded."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jupytext
import papermill
import torch

from .. import processes, provenance
from ..core.sources import source_file
from ..errors import BookError, require
from ..io import replace_folders, sha256, write_atomic
from ..settings import STAGING, results_dir
from . import cache, costs
from .commit import commit, now
from .costs import BUILD_STARTED
from .folders import Edition
from .vouching import vouched_outputs

KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def _publish_results(staged: Path, edition: Edition, chapter: str, outputs: list[str]) -> None:
    """Replace every result folder of the chapter in the edition (one per model, and its figures) by the files the run
    recorded writing (`outputs`: paths under the results folder) and nothing else, all of them or none: afterwards the
    edition holds exactly this run's recorded results for the chapter; anything else in its folders is discarded with
    them. They are copied beside the old folders, on the results' own file system, and every folder is checked first
    (`io.replace_folders`); the chapter's cache entry is removed while they are swapped in (from there to the new entry
    nothing vouches for the chapter) and put back when that fails. A failure stops with one line naming the file and
    leaves the edition's results and entry as they were."""
    final, profile = results_dir(), edition.profile
    folders: dict[Path, list[str]] = {old: [] for old in (final / profile).glob(f"*/{chapter}") if old.is_dir()}
    for label in sorted(set(outputs)):
        parts = Path(label).parts
        require(
            len(parts) > 3 and parts[0] == profile and parts[2] == chapter,
            f"chapter {chapter} recorded writing {label}, outside its results folders ({profile}/<model>/{chapter}/); "
            f"the edition keeps its last good run of {chapter}: write results with lib.book.results.Results and run it again",
        )
        folders.setdefault(final.joinpath(*parts[:3]), []).append(label)

    def copier(labels: list[str]) -> Callable[[Path], None]:
        def write(folder: Path) -> None:
            for label in labels:
                target = folder.joinpath(*Path(label).parts[3:])
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(staged / label, target)

        return write

    entry = edition.entry(chapter)
    kept = entry.read_bytes() if entry.is_file() else None
    try:
        replace_folders(
            {folder: copier(labels) if labels else None for folder, labels in folders.items()},
            failure=f"cannot publish the results of chapter {chapter}",
            remedy=(
                f"fix that (or point BOOK_RESULTS_DIR at a folder you can write), then run chapter {chapter} again; "
                f"the {profile} edition keeps its last good run of {chapter} (results, executed notebook and cache entry as they were)"
            ),
            before=lambda: entry.unlink(missing_ok=True),
        )
    except BookError:
        if kept is not None and not entry.exists():
            write_atomic(entry, lambda p: p.write_bytes(kept))
        raise


def _threads() -> int:
    """The CPU threads a chapter's kernel computes with (its environment's, else torch's)."""
    return int(os.environ.get("OMP_NUM_THREADS") or torch.get_num_threads())


def pid_file(edition: Edition, chapter: str) -> Path:
    """Names the process executing a chapter while it runs (`running/<chapter>.pid`, `lib.processes`)."""
    return processes.pid_file(edition.root / "running", chapter)


def run_chapter(chapter: str, parameters: dict[str, Any], edition: Edition, parts: dict[str, Any], guard: Callable[[], None] | None = None) -> cache.Entry:
    """Execute one chapter; its tables and figures go to a fresh folder of its own. On success the files it recorded
    replace the chapter's results, then its executed notebook and its cache entry (with the key made of parts) replace
    the old ones; a run that fails or is killed leaves the edition's results and entry as they were. `guard` is called
    before anything is published (a worker checks there that its runner still holds the edition)."""
    with processes.executing(pid_file(edition, chapter).parent, chapter, _threads()):  # the cores it holds (`processes.free_cores`)
        return _execute_notebook(chapter, parameters, edition, parts, guard)


def _execute_notebook(chapter: str, parameters: dict[str, Any], edition: Edition, parts: dict[str, Any], guard: Callable[[], None] | None) -> cache.Entry:
    notebook = jupytext.read(source_file(chapter))
    notebook.metadata["kernelspec"] = KERNEL
    edition.notebooks.mkdir(parents=True, exist_ok=True)
    staged, scratch = edition.running(chapter), edition.root / "tmp"
    shutil.rmtree(staged, ignore_errors=True)  # what a killed run of this chapter left
    for leftover in scratch.glob(f"{chapter}-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    scratch.mkdir(parents=True, exist_ok=True)
    started, start = now(), time.time()
    with tempfile.TemporaryDirectory(prefix=f"{chapter}-", dir=scratch) as tmp:
        executed_in, executed_out, log = Path(tmp) / "input.ipynb", Path(tmp) / f"{chapter}.ipynb", Path(tmp) / "provenance.jsonl"
        jupytext.write(notebook, executed_in)
        os.environ[provenance.ENV] = str(log)  # the kernel inherits it: lib records what the chapter reads and writes
        os.environ[STAGING] = str(staged)  # and this: the chapter writes its results there (`settings.output_dir`)
        # and this: the other chapters' results it may read, those their current runs vouch for (`vouching`)
        vouched = Path(tmp) / "vouched.json"
        vouched.write_text(json.dumps(vouched_outputs(edition, but=chapter)), encoding="utf-8")
        os.environ[provenance.VOUCHED] = str(vouched)
        # and this: matplotlib writes it as the figures' PDF creation date, so the same results give byte-identical files
        # (a chapter executed again with nothing changed does not make the scorecard, which reads the results folder, stale)
        os.environ.setdefault("SOURCE_DATE_EPOCH", "0")
        try:
            papermill.execute_notebook(
                str(executed_in),
                str(executed_out),
                parameters=parameters,
                kernel_name=KERNEL["name"],
                cwd=str(edition.notebooks),
                log_output=True,
                progress_bar=False,
                # CRITICAL: a kernel stopped after a failed cell logs "KeyboardInterrupt caught" at ERROR level
                # on the shared stderr, which would add a second line to the one-line error
                extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
            )
        except papermill.PapermillExecutionError as err:
            shutil.rmtree(staged, ignore_errors=True)
            failed = edition.notebooks / "failed" / executed_out.name
            write_atomic(failed, lambda p: shutil.copyfile(executed_out, p))
            raise BookError(f"chapter {chapter} failed: {err.ename}: {err.evalue} (executed notebook kept in {failed})") from None
        finally:
            os.environ.pop(provenance.ENV, None)
            os.environ.pop(STAGING, None)
            os.environ.pop(provenance.VOUCHED, None)
        if guard is not None:
            guard()
        recorded = provenance.read(log)
        reused = sum(r["kind"] == "reused" and _earlier(r["path"]) for r in recorded)  # not inputs, and not its cost
        recorded = [r for r in recorded if r["kind"] != "reused"]
        missing = [r["label"] for r in recorded if r["kind"] == "output" and not (staged / r["label"]).is_file()]
        if missing:  # checked before anything is replaced: a failed run leaves the last good entry and results as they were
            shutil.rmtree(staged, ignore_errors=True)
            raise BookError(
                f"chapter {chapter} recorded writing {missing[0]} but its run left no such file (was {staged} removed?); "
                f"the edition keeps its last good run of {chapter}: run it again"
            )
        try:
            _publish_results(staged, edition, chapter, [r["label"] for r in recorded if r["kind"] == "output"])
        finally:
            shutil.rmtree(staged, ignore_errors=True)
        records = [{**r, "path": str(results_dir() / r["label"])} if r["kind"] == "output" else r for r in recorded]
        records = cache.with_digests(records)
        # the CPU threads the kernel computed with: float sums, and so the last digits of results, depend on them
        facts = {"started": started, "finished": now(), "seconds": round(time.time() - start, 1), "threads": _threads(), "device": costs.device(), **commit()}
        facts |= {"reused": reused} if reused else {}
        path = write_atomic(edition.notebook(chapter), lambda p: shutil.copyfile(executed_out, p))
    entry = cache.Entry(
        chapter=chapter,
        key=cache.key(parts),
        parts=parts,
        notebook=sha256(path),
        inputs=[r for r in records if r["kind"] != "output"],
        outputs=[r for r in records if r["kind"] == "output"],
        facts=facts,
    )
    entry.save(edition.entry(chapter))  # after the notebook: an interrupted run leaves no entry that vouches for it
    return entry


def _earlier(path: str) -> bool:
    """Whether cached work a chapter took (a "reused" record) was done before this build started: a fine-tuning run
    the chapter itself cached a minute earlier, or a pre-training run trained ahead of it, is part of this build's cost."""
    since = float(os.environ.get(BUILD_STARTED) or "inf")
    return not Path(path).exists() or Path(path).stat().st_mtime < since
