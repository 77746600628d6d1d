"""Built pages as a browser lays them out (Debian's Chromium, headless): how many pixels of each table are hidden
behind its scroll box and whether it shows the scroll cue, whether the page itself scrolls sideways, and the contrast
of each tab label against what is behind it, in the light or the dark theme.

The pages are served from 127.0.0.1 with a measuring script appended to each; Chromium loads one page at a time,
runs it and prints the page's DOM, from which the measurements are read back (no driver package needed).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from lib.errors import require

MEASURE = """<script>
const dark = () => {
  if (location.hash !== "#dark") return;
  document.documentElement.dataset.theme = "dark";
  document.documentElement.dataset.mode = "dark";
};
window.addEventListener("load", () => { // measured as the load event ends, before Chromium dumps the page: no timer that the dump could outrun
  "use strict";
  const still = document.createElement("style"); // colours are read as they end, not halfway through a transition
  still.textContent = "*, *::before, *::after { transition: none !important; }";
  document.head.append(still);
  dark();
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const behind = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c; } return [255, 255, 255]; };
  const out = {page: document.documentElement.scrollWidth - document.documentElement.clientWidth, tables: [], tabs: []};
  const boxed = ".pst-scrollable-table-container, pre, .bd-sidebar-primary, .bd-sidebar-secondary";
  const past = (e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !e.closest(boxed);
  out.wide = [...document.querySelectorAll("article *")].filter((e) => past(e) && ![...e.children].some(past))
    .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className}: ${(e.textContent || "").trim().slice(0, 60)}`);
  document.querySelectorAll("table").forEach((t) => {
    const box = t.closest(".pst-scrollable-table-container") || t.parentElement;
    const caption = ((t.querySelector("caption") || {}).textContent || "").replace(/#$/, "");
    out.tables.push({caption: caption.trim().slice(0, 80), hidden: box.scrollWidth - box.clientWidth,
      cue: box.classList.contains("book-scrolls")});
  });
  document.querySelectorAll(".sd-tab-set > label").forEach((l) => {
    const a = lum(rgb(getComputedStyle(l).color)), b = lum(behind(l));
    out.tabs.push({label: l.textContent.trim(), contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)});
  });
  const pre = document.createElement("pre"); pre.id = "book-measure"; pre.hidden = true; pre.textContent = JSON.stringify(out);
  document.body.append(pre); // hidden: the theme gives a visible pre that scrolls a tabindex, which the reading below allows too
});
</script>"""


def chromium() -> str | None:
    """The Chromium binary on this machine, if any (Debian: `apt install chromium`)."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class _Measuring(SimpleHTTPRequestHandler):
    """Serves a folder, every HTML page with the measuring script before `</body>`."""

    def do_GET(self) -> None:  # noqa: N802 (the http.server name)
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if path.suffix != ".html" or not path.is_file():
            return super().do_GET()
        body = path.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """The folder served on 127.0.0.1 with measuring pages; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Measuring, directory=str(folder)))
    server.handle_error = lambda request, address: None  # a browser that closes a connection early is no error here
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def measure(url: str, width: int, dark: bool = False, timeout: float = 60) -> dict[str, Any]:
    """One page's measurements at a window `width` px wide: `page` (px the page scrolls sideways) and `wide` (the first
    elements that reach past the window, outside scroll boxes), `tables` (caption, px hidden, whether it shows the cue)
    and `tabs` (label, contrast ratio)."""
    binary = chromium()
    require(binary is not None, "no Chromium on this machine: apt install chromium (Debian), then run again")
    for _ in range(3):  # a page Chromium dumped without the measurements is loaded again
        with tempfile.TemporaryDirectory() as profile:
            flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
            flags += ["--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", f"--window-size={width},1000"]
            flags += ["--virtual-time-budget=20000", "--dump-dom", url + ("#dark" if dark else "")]
            done = subprocess.run([binary, *flags], capture_output=True, text=True, timeout=timeout)
        found = re.search(r'<pre id="book-measure"[^>]*>(.*?)</pre>', done.stdout, re.S)
        if found:
            break
    title = re.search(r"<title>(.*?)</title>", done.stdout, re.S)
    shown = f"a page titled {title.group(1).strip()!r}" if title else f"{len(done.stdout)} characters"
    require(found is not None, f"Chromium did not lay out {url} three times (exit {done.returncode}; it printed {shown}): {done.stderr.strip()[-300:]}")
    return json.loads(found.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"'))
