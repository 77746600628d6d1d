"""What the edition adds to a chapter's page: its note (edition, parameters that differ from the defaults, run, links),
the models caveat and the parameter reference."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..book.chapter import trained_spec
from ..book.markdown import escape
from ..core.profiles import profile_parameters
from ..core.sources import chapters, comma_list, declared_parameters, source_file
from ..encode.models import reader_name, shown_name
from ..settings import REPO_ROOT, cache_dir, data_dir, models_dir, results_dir
from . import launch, reference
from .cache import Entry
from .commit import commit_text
from .costs import duration
from .folders import Edition


def changed_parameters(chapter: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The parameters of a run that differ from the chapter's parameters cell (the profile name left out)."""
    declared = declared_parameters(chapter)
    return {k: v for k, v in parameters.items() if k != "profile" and declared.get(k) != v}


def shown_value(name: str, value: Any) -> Any:
    """A parameter's value as pages show it: a list of models by their names (a local folder's, never its path)."""
    return ",".join(shown_name(spec) for spec in comma_list(value)) if name == "models" else value


def setting_words(name: str, value: Any, profile: str) -> Any:
    """A changed setting's value as a reader reads it: models by their names ("all-MiniLM-L6-v2, quick-roberta-pe"),
    a list with spaces after its commas, a per-task dict as "imdb 20, sst2 100"; a number as it is."""
    if name == "models":
        return ", ".join(reader_name(trained_spec(spec, profile)) for spec in comma_list(value))
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in value.items())
    return ", ".join(comma_list(value)) if isinstance(value, str) else value


def hide_paths(text: str) -> str:
    """A text with this machine's folders replaced by their setting's name, for pages that are published."""
    folders = [
        (results_dir(), "$BOOK_RESULTS_DIR"),
        (models_dir(), "$BOOK_MODELS_DIR"),
        (cache_dir(), "$BOOK_CACHE_DIR"),
        (data_dir(), "$BOOK_DATA_DIR"),
        (Path(sys.prefix), "<python>"),
        (Path(sys.base_prefix), "<python>"),
        (REPO_ROOT, "<repository>"),
        (Path.home(), "~"),
    ]
    for folder, name in sorted(folders, key=lambda f: -len(str(f[0]))):  # the longest first: the venv is inside the repository
        text = text.replace(str(folder), name)
    return text


def run_times(chapter: str) -> str:
    """The chapter's last measured wall time in each of the default and quick editions built on this machine."""
    times = []
    for profile in ("default", "quick"):
        entry = Entry.load(Edition(profile).entry(chapter))
        if entry is not None:
            times.append(f"{duration(entry.facts['seconds'])} in the {profile} edition")
    return ", ".join(times)


def chapter_note(chapter: str, entry: Entry, profile: str, folded_reference: bool = True, student: bool = False) -> str:
    """The one box at the end of an executed chapter's Summary: how this page was made (edition, date, commit, run time, models
    measured, parameters changed), with the chapter's parameter reference folded inside (not in print: the PDF has
    every chapter's reference in its re-run chapter, and LaTeX cannot break a long table inside a box)."""
    facts = entry.facts
    changed = changed_parameters(chapter, entry.parts["parameters"])
    meaning = reference.meanings(chapter)
    said = [reference.meaning_of("models" if k == "models" else meaning.get(k, k), k, setting_words(k, v, profile)) for k, v in changed.items()]
    settings = "; ".join(map(escape, said)) if changed else "none"
    return (
        "::::{admonition} How this page was made\n:class: note\n"
        f"**{profile.capitalize()} edition**, executed {facts['finished'][:16].replace('T', ' ')} UTC at commit {commit_text(facts)}; "
        f"run time on the machine that built it: {run_times(chapter) or duration(facts['seconds'])}. {models_caveat(chapter, entry)}"
        f"Settings changed from the chapter's defaults: {settings}. The data and model files it read, with their "
        f"checksums, are in the {{ref}}`build report <build-{chapter}>`.\n\n" + (parameters_dropdown(chapter) if folded_reference else "") + "::::\n"
    )


def models_caveat(chapter: str, entry: Entry) -> str:
    """A sentence for the page's box when the chapter measured other models than the papers (the paper profile's
    `models`); empty otherwise."""
    declared = declared_parameters(chapter)
    if "models" not in declared:
        return ""
    ran, theirs = (
        comma_list(value)
        for value in (entry.parts["parameters"].get("models", declared["models"]), profile_parameters("paper", chapter).get("models", declared["models"]))
    )
    if set(ran) == set(theirs):
        return ""
    return (
        f"**Not the papers' models**: it measures {', '.join(escape(reader_name(m)) for m in ran)}; the papers measured "
        f"{', '.join(escape(reader_name(m)) for m in theirs)}. Columns headed *paper* hold their numbers on their models, for comparison, "
        "not as our result (the `paper` profile runs this chapter on their models). "
    )


def launch_links(chapter: str, student: bool = False) -> str:
    """The line under a chapter's title that opens it as a live notebook (for students without the solutions) and
    shows its source; without a GitHub repository setting there are none, and the line links to how to run it from a clone
    (the rerun page tells builders which setting adds them)."""
    binder, colab, repo = launch.binder_url(chapter, student), launch.colab_url(chapter, student), launch.repository()
    if repo is None:
        return "*Run it yourself*: from a clone ({doc}`how <../rerun>`)\n\n"
    source = f"https://github.com/{repo[0]}/blob/{repo[1]}/notebooks/{chapter}.py"
    return f"*Run it yourself*: [▶ Binder]({binder}) (CPU) · [▶ Colab]({colab}) (GPU) · [source]({source}) · {{doc}}`how <../rerun>`\n\n"


def title(chapter: str) -> str:
    for line in source_file(chapter).read_text(encoding="utf-8").splitlines():
        if line.startswith("# # "):
            return line[4:].strip()
    return chapter


def parameters_dropdown(chapter: str) -> str:
    """The chapter's parameter reference, folded, for the box at the end of its Summary."""
    return (
        ":::{dropdown} Parameters of this chapter\n:class-container: book-parameters\n\n"
        "Set them with `-p NAME VALUE` (see {doc}`How to re-run this book <../rerun>`); the quick and paper editions' "
        "values are named where they differ from the default.\n\n" + reference.markdown(chapter) + ":::\n"
    )


def all_references() -> str:
    return "\n".join(f"### {title(c)} (`{c}`)\n\n{reference.markdown(c)}" for c in chapters())
