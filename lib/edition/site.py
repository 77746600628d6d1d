"""The published site: the editions side by side, each under a path of its own, with the list that the edition switcher
on every page reads (book/static/editions.js).

    _build/site/index.html       sends a visitor to the first edition
    _build/site/editions.json    [{"name": "default", "title": "…"}, …], in the order the switcher shows them
    _build/site/<name>/          that edition's HTML, checked by `edition.publish`

    python -m lib.edition.site                            # default, student (of default) and quick, as built
    python -m lib.edition.site --editions default,quick   # only these
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from ..core.sources import comma_list
from ..errors import cli, require
from ..settings import build_dir
from .folders import Edition
from .publishing import publish

EDITIONS = {  # name on the site -> the edition, and what a reader is told it is
    "default": (Edition("default"), "the published edition"),
    "student": (Edition("default", student=True), "the published edition without the exercises' solutions"),
    "quick": (Edition("quick"), "tiny samples: checks that every chapter runs"),
}
REDIRECT = '<!DOCTYPE html>\n<meta charset="utf-8">\n<meta http-equiv="refresh" content="0; url={0}/index.html">\n<a href="{0}/index.html">{0}</a>\n'


def assemble(names: list[str], target: Path) -> Path:
    """Copy each named edition's checked HTML into target/<name>/ and write editions.json and the front redirect."""
    unknown = [n for n in names if n not in EDITIONS]
    require(not unknown, f"unknown edition {', '.join(unknown)}; choose from {', '.join(EDITIONS)}")
    require(len(names) > 0, "name at least one edition")
    folders = {name: publish(EDITIONS[name][0]) for name in names}  # each must be built and ready to upload
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    for name, html in folders.items():
        shutil.copytree(html, staging / name)
    listing = [{"name": name, "title": EDITIONS[name][1]} for name in names]
    (staging / "editions.json").write_text(json.dumps(listing, indent=1), encoding="utf-8")
    (staging / "index.html").write_text(REDIRECT.format(names[0]), encoding="utf-8")
    (staging / ".nojekyll").touch()
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)  # the site appears whole or not at all
    return target


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.edition.site", description=__doc__.splitlines()[0])
    parser.add_argument("--editions", default=",".join(EDITIONS), help="comma-separated, in the switcher's order")
    args = parser.parse_args(argv)
    names = comma_list(args.editions)
    print(f"site with {', '.join(names)}: {assemble(names, build_dir() / 'site')}")


if __name__ == "__main__":
    main()
