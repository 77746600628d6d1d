"""A built edition as a reader meets it, for before → after comparisons: every fault the browser test finds, by kind
and counted, where each chapter's text starts on a phone and how long its page is, the scorecard's and rerun page's
landmarks, screenshots of the figures and tables issue 58 named (an element in a tab with its tab opened) and of each
chapter's first screen on a phone. Nothing
here is asserted (tests/test_browser.py does that); it prints and saves.

    python -m tests.page_shots _build/default/html OUT    # OUT/faults.txt, OUT/landmarks.json, OUT/<shot>.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lib.core.sources import chapters

from . import browser
from .test_browser import CHECKS, faults

FIND = "[...document.querySelectorAll('figure, table')].find((e) => ((e.querySelector('.caption-number') || {}).textContent || '').trim() === %s)"
SHOTS = [  # (file name, page, device, caption number; None: the page's first screen)
    ("fig-12-1", "chapters/12_isotropy_word_similarity", browser.LAPTOP, "Fig. 12.1"),
    ("fig-10-2", "chapters/10_common_direction", browser.LAPTOP, "Fig. 10.2"),
    ("fig-10-3", "chapters/10_common_direction", browser.LAPTOP, "Fig. 10.3"),
    ("fig-05-1", "chapters/05_pretraining", browser.LAPTOP, "Fig. 5.1"),
    ("fig-11-1", "chapters/11_rare_words", browser.LAPTOP, "Fig. 11.1"),
    ("fig-04-3", "chapters/04_position_probe", browser.LAPTOP, "Fig. 4.3"),
    ("table-04-1-1280", "chapters/04_position_probe", browser.LAPTOP, "Table 4.1"),
    ("table-05-6-1280", "chapters/05_pretraining", browser.LAPTOP, "Table 5.6"),
    ("table-13-2-390", "chapters/13_isotropy_calibration", browser.PHONE, "Table 13.2"),
    ("table-14-1-390", "chapters/14_scorecard", browser.PHONE, "Table 14.1"),
    ("scorecard-1280", "chapters/14_scorecard", browser.LAPTOP, None),
    *((f"opening-{page[:2]}-390", f"chapters/{page}", browser.PHONE, None) for page in chapters()),  # each chapter's first phone screen
]
LANDMARKS = {  # page: JavaScript giving what to compare
    "chapters/14_scorecard": "({height: document.documentElement.scrollHeight, first_table_at: Math.round(document.querySelector('article table')"
    ".getBoundingClientRect().top + scrollY), tables: document.querySelectorAll('article table').length})",
    "rerun": "({height: document.documentElement.scrollHeight, other_parameters_at: Math.round(document.getElementById("
    "'one-chapter-other-parameters').getBoundingClientRect().top + scrollY)})",
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.page_shots", description=__doc__.splitlines()[0])
    parser.add_argument("html", type=Path, help="a built edition's html folder")
    parser.add_argument("out", type=Path, help="where the fault list, the landmarks and the screenshots go")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    pages = sorted(p.relative_to(args.html).as_posix() for p in args.html.glob("book/**/*.html"))
    with browser.serve(args.html) as base, browser.Browser() as window:
        found: dict[str, list[str]] = {check: [] for check in CHECKS}
        for page in pages:
            for check, listed in faults(page, base, args.html, window).items():
                found[check] += listed
        (args.out / "faults.txt").write_text("".join(f"[{check}] {f}\n" for check, listed in found.items() for f in listed), encoding="utf-8")
        marks: dict = {"faults by kind": {check: len(listed) for check, listed in found.items()}}
        for page in (p for p in pages if "/chapters/" in p):
            laptop, phone = window.load(base + page, browser.LAPTOP), window.load(base + page, browser.PHONE)
            marks[page] = {"prose_at_390": round(phone["prose"] or 0), "height_at_1280": laptop["height"], "height_at_390": phone["height"]}
        for page, js in LANDMARKS.items():
            window.load(f"{base}book/{page}.html", browser.LAPTOP)
            value = window._call("Runtime.evaluate", {"expression": js, "returnByValue": True}, page=True)["result"]
            marks[page] = value.get("value")  # None: the page lacks the landmark (a chapter not executed)
        (args.out / "landmarks.json").write_text(json.dumps(marks, indent=1), encoding="utf-8")
        for name, page, device, caption in SHOTS:
            window.load(f"{base}book/{page}.html", device)
            screen = f"({{getBoundingClientRect: () => new DOMRect(0, -window.scrollY, {device[0]}, {device[1]})}})"
            try:
                window.screenshot(args.out / f"{name}.png", screen if caption is None else FIND % json.dumps(caption))
            except KeyError:  # the browser found no such element
                print(f"{name}: {caption} is not on {page} (a chapter not executed?)")
    print("".join(f"{len(listed):5d} {check}\n" for check, listed in found.items()), end="")
    total = sum(map(len, found.values()))
    print(f"{total} faults on {len(pages)} pages; landmarks and {len(SHOTS)} screenshots in {args.out}")


if __name__ == "__main__":
    main()
