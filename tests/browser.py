"""Built pages as a browser lays them out (Debian's Chromium, headless, at a laptop's or a phone's device metrics), with
each tab and folded solution opened as a reader opens it: how many pixels of each table are hidden behind its scroll
box, whether it shows the scroll cue or is stacked and which of its words a line break splits, whether the page itself
scrolls sideways and how long it is, each figure's shown and natural size and where it links, where the first
paragraph of prose starts, the lines each output prints, the reader's text, where each internal link lands, and the
contrast of each tab label against what is behind it, light or dark.

The pages are served from 127.0.0.1 with a measuring script appended to each. One Chromium, driven over the DevTools
protocol on a pipe (no driver package needed), loads them one at a time in a viewport of the set device metrics (a real
390 px phone: `--window-size` stops at 500 px), and reads the measurements back; it can also save a screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from lib.errors import BookError, require

MEASURE = """<script>
window.addEventListener("load", async () => { // measured once the page and its images have loaded; read back over DevTools
  "use strict";
  const style = (css) => { const s = document.createElement("style"); s.textContent = css; document.head.append(s); };
  style("*, *::before, *::after { transition: none !important; }"); // colours are read as they end, not mid-transition
  if (location.hash === "#dark") { document.documentElement.dataset.theme = "dark"; document.documentElement.dataset.mode = "dark"; }
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const behind = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c; } return [255, 255, 255]; };
  const out = {tabs: [], page: 0, wide: [], tables: [], figures: []};
  document.querySelectorAll(".sd-tab-set > label").forEach((l) => {
    const a = lum(rgb(getComputedStyle(l).color)), b = lum(behind(l));
    out.tabs.push({label: l.textContent.trim(), contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)});
  });
  const article = document.querySelector("article") || document.body;
  const images = [...article.querySelectorAll("img")];
  images.forEach((i) => { i.loading = "eager"; });
  await Promise.all(images.map((i) => i.decode().catch(() => null)));
  out.height = document.documentElement.scrollHeight; // the page as it opens, its first tabs shown
  const width = document.documentElement.clientWidth;
  const boxed = ".pst-scrollable-table-container, pre, .bd-sidebar-primary, .bd-sidebar-secondary";
  const past = (e) => e.getBoundingClientRect().right > width + 1 && !e.closest(boxed);
  const shown = (e) => e.getClientRects().length > 0;
  const tabOf = (e) => { const c = e.closest(".sd-tab-content"); return c ? c.previousElementSibling.textContent.trim() : null; };
  const joins = /(?<=[-\u2010\u2013\u2014/])(?=[^\\d\\s])/u; // where a token may break: after a hyphen, dash or slash, not in a number
  const broken = (table) => { // the words and numbers of a table that a line break splits (Range rects per piece of text)
    const found = [];
    const walker = document.createTreeWalker(table, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.parentElement.closest("td, th") || node.parentElement.closest("code")) continue; // a hash or a command may wrap anywhere
      for (const token of node.data.matchAll(/\\S+/g)) {
        let at = token.index;
        for (const piece of token[0].split(joins)) {
          const range = document.createRange();
          range.setStart(node, at);
          range.setEnd(node, (at += piece.length));
          const rects = [...range.getClientRects()].filter((r) => r.width > 0);
          if (rects.length > 1 && Math.max(...rects.map((r) => r.top)) >= Math.min(...rects.map((r) => r.bottom)) - 1) found.push(piece);
        }
      }
    }
    return found;
  };
  const measured = new Set();
  const take = () => { // what the open tabs and dropdowns show, each table and figure measured once
    out.page = Math.max(out.page, document.documentElement.scrollWidth - width);
    const wide = [...article.querySelectorAll("*")].filter((e) => past(e) && ![...e.children].some(past))
      .map((e) => `${e.tagName.toLowerCase()}.${e.className}: ${(e.textContent || "").trim().slice(0, 60)}`);
    out.wide = [...new Set([...out.wide, ...wide])].slice(0, 5);
    article.querySelectorAll("table").forEach((t) => {
      if (measured.has(t) || !shown(t)) return;
      measured.add(t);
      const box = t.closest(".pst-scrollable-table-container") || t.parentElement;
      const caption = ((t.querySelector("caption") || {}).textContent || "").replace(/#$/, "").trim();
      out.tables.push({caption: caption.slice(0, 80), tab: tabOf(t), hidden: box.scrollWidth - box.clientWidth,
        cue: box.classList.contains("book-scrolls"), stacked: box.classList.contains("book-stacked"), broken: broken(t)});
    });
    images.forEach((i) => {
      if (measured.has(i) || !shown(i)) return;
      measured.add(i);
      const r = i.getBoundingClientRect(), link = i.closest("a[href]");
      out.figures.push({src: new URL(i.currentSrc || i.src).pathname, tab: tabOf(i), natural: [i.naturalWidth, i.naturalHeight],
        shown: [r.width, r.height], link: link ? new URL(link.href).pathname : null});
    });
  };
  const settle = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  take();
  const opened = [...document.querySelectorAll(".sd-tab-set > input:checked")];
  for (const label of document.querySelectorAll(".sd-tab-set > label")) { // each tab opened as a reader opens it
    const input = document.getElementById(label.htmlFor);
    if (!input || input.checked) continue;
    label.click(); // the label checks its radio input, which fires "change"
    await settle();
    take();
  }
  const dropdowns = [...article.querySelectorAll(".toggle-hidden > .admonition-title")]; // folded solutions
  for (const title of dropdowns) { title.click(); await settle(); take(); }
  dropdowns.forEach((title) => title.click());
  opened.forEach((input) => document.querySelector(`label[for="${input.id}"]`).click()); // the page as it opened
  await settle();
  out.outputs = [...document.querySelectorAll(".cell_output pre")].map((p) => p.textContent); // folded outputs too
  const prose = document.querySelector("article section > p");
  out.prose = prose ? prose.getBoundingClientRect().top + window.scrollY : null;
  const answer = document.querySelector("article .book-answer"); // a chapter's computed answer, under its title
  out.answer = answer ? answer.getBoundingClientRect().bottom + window.scrollY : null;
  // not the reader's text: code, an exercise's command line, a parameter reference (it names what `-p` sets)
  const code = ".cell_input, .exercise code, .solution code, .book-parameters, script, style, mjx-container, .headerlink";
  const blocks = new Map(); // the reader's text (not code, nor an exercise's command line), by the block that shows it
  const texts = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let node = texts.nextNode(); node; node = texts.nextNode()) {
    const at = node.parentElement, listing = at.closest("div[class*='highlight-']");
    if (at.closest(code) || (listing && !listing.closest(".cell_output"))) continue;
    const block = at.closest("p, li, td, th, caption, figcaption, h1, h2, h3, h4, h5, h6, pre, dt, dd") || at;
    blocks.set(block, (blocks.get(block) || "") + node.data);
  }
  out.text = [...blocks.values()].map((t) => t.replace(/\\s+/g, " ").trim()).filter(Boolean);
  const pages = new Map(); // the pages links lead to, fetched once
  const page = (url) => {
    if (url.pathname === location.pathname) return document;
    if (!pages.has(url.pathname)) pages.set(url.pathname, fetch(url.pathname).then((r) => (r.ok ? r.text() : ""))
      .then((t) => new DOMParser().parseFromString(t, "text/html")));
    return pages.get(url.pathname);
  };
  const heading = "h1, h2, h3, h4, h5, h6";
  const titleOf = (e) => { // the heading or caption a link's target is titled by (a label's anchor: the heading after it)
    if (e.matches(`${heading}, dt`)) return e; // a heading, or a glossary term
    if (e.matches("section")) return e.querySelector(heading);
    const caption = e.querySelector(":scope > caption, :scope > figcaption, :scope > .admonition-title");
    if (caption || e.textContent.trim()) return caption;
    for (let next = e.nextElementSibling; next; next = next.nextElementSibling) {
      if (next.matches(heading)) return next;
      if (next.textContent.trim()) return null;
    }
    return null;
  };
  const words = (e) => { const c = e.cloneNode(true); c.querySelectorAll(".caption-number, .section-number, .headerlink, button").forEach((x) => x.remove());
    return c.textContent.replace(/\\s+/g, " ").trim(); };
  out.links = [];
  for (const a of article.querySelectorAll("a.reference.internal[href]")) {
    const url = new URL(a.href), text = a.textContent.replace(/\\s+/g, " ").trim();
    if (url.origin !== location.origin || !/(\\.html|\\/)$/.test(url.pathname) || !text || a.closest("nav, .toctree-wrapper")) continue; // pages only
    const doc = await page(url), id = decodeURIComponent(url.hash.slice(1));
    const target = id ? doc.getElementById(id) : doc.querySelector("article h1") || doc.querySelector("h1");
    const link = {text, href: a.getAttribute("href"), found: Boolean(target), title: null, number: null, around: []};
    const title = target && titleOf(target);
    if (title) {
      link.title = words(title);
      link.number = ((title.querySelector(".caption-number, .section-number") || {}).textContent || "").trim() || null;
      for (let s = target.closest("section"); s; s = s.parentElement.closest("section")) {
        const h = s.querySelector(`:scope > ${heading.replaceAll(", ", ", :scope > ")}`);
        if (h) link.around.push(words(h));
      }
    }
    out.links.push(link);
  }
  const pre = document.createElement("pre"); pre.id = "book-measure"; pre.hidden = true; pre.textContent = JSON.stringify(out);
  document.body.append(pre);
});
</script>"""

LAPTOP = (1280, 900, False)  # width and height in CSS px, and whether the device is a phone
PHONE = (390, 844, True)  # an iPhone 12-15's viewport


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


class Browser:
    """One headless Chromium driven over the DevTools protocol on a pipe (fd 3 its commands, fd 4 its replies, each
    message JSON ending in a NUL byte), with one page whose device metrics each `load` sets."""

    def __init__(self, timeout: float = 60):
        binary = chromium()
        require(binary is not None, "no Chromium on this machine: apt install chromium (Debian), then run again")
        self.timeout, self._next, self._buffer = timeout, 0, b""
        self._profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
        commands, self._to_browser = os.pipe()
        self._from_browser, replies = os.pipe()
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
        flags += ["--disable-component-update", "--disable-sync", "--hide-scrollbars", f"--user-data-dir={self._profile.name}", "--remote-debugging-pipe"]
        wrapper = f'exec "$0" "$@" 3<&{commands} 4>&{replies}'  # the pipe's ends at the fds Chromium reads and writes
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self._process = subprocess.Popen(["bash", "-c", wrapper, binary, *flags], pass_fds=(commands, replies), **quiet)
        os.close(commands)
        os.close(replies)
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._to_browser)
        self._process.kill()
        self._process.wait()
        os.close(self._from_browser)
        self._profile.cleanup()

    def _call(self, method: str, params: dict | None = None, page: bool = False) -> dict:
        """Send one command (to the page's session if `page`) and return its result; events on the way are dropped."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}} | ({"sessionId": self._session} if page else {})
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buffer:
                left = deadline - time.monotonic()
                require(left > 0 and select.select([self._from_browser], [], [], left)[0], f"Chromium did not answer {method} within {self.timeout:.0f} s")
                chunk = os.read(self._from_browser, 1 << 20)
                require(bool(chunk), f"Chromium closed its pipe while answering {method}")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next:
                require("error" not in reply, f"Chromium refused {method}: {reply.get('error')}")
                return reply["result"]

    def load(self, url: str, device: tuple[int, int, bool] = LAPTOP, dark: bool = False) -> dict[str, Any]:
        """Open a measuring page (`serve`) in a viewport of `device`'s metrics, light or dark, then each of its tabs and
        folded solutions as a reader does (a click on its label or title; each table and figure is measured when it is
        first shown), and close them again: `page` (px the page scrolls sideways) and `wide` (the first elements that
        reach past the window, outside scroll boxes), `height` (px, as the page opens), `tables` (caption, tab, px
        hidden, scroll cue, stacked, the words and numbers a line break splits), `figures` (image path, tab, natural and
        shown size, the path it links to), `outputs` (each output's text), `prose` (px from the top to the first
        paragraph of the page's text), `tabs` (label, contrast ratio), `text` (the reader's text by block, without code
        and exercises' command lines) and `links` (each internal link's text and address, whether its target exists,
        and the target's heading or caption: its words, its number, the headings of the sections around it)."""
        width, height, phone = device
        self._call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": phone}, page=True)
        self._call("Page.navigate", {"url": "about:blank"}, page=True)  # a new document even where only the #dark differs
        self._call("Page.navigate", {"url": url + ("#dark" if dark else "")}, page=True)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            found = self._call("Runtime.evaluate", {"expression": "document.getElementById('book-measure')?.textContent ?? ''"}, page=True)
            if text := found["result"].get("value"):
                return json.loads(text)
            time.sleep(0.1)
        raise BookError(f"{url} was not measured within {self.timeout:.0f} s at {width} px (does it load its scripts?)")

    def screenshot(self, path: Path, element: str | None = None, margin: int = 8) -> None:
        """Save the loaded page as PNG: the whole page, or the element a JavaScript expression gives (its tab opened), with a
        margin."""
        target = element or "document.documentElement"
        tabs = "for (let c = e.closest && e.closest('.sd-tab-content'); c; c = c.parentElement.closest('.sd-tab-content'))"
        opening = f"((e) => {{ {tabs} c.previousElementSibling.click(); }})({target})"  # an element in a tab: its tab opened first
        self._call("Runtime.evaluate", {"expression": opening}, page=True)
        box = self._call("Runtime.evaluate", {"expression": f"JSON.stringify(({target}).getBoundingClientRect().toJSON())"}, page=True)
        rect = json.loads(box["result"]["value"])
        x, y = max(0, rect["x"] - margin), max(0, rect["y"] + self._scrolled() - margin)
        clip = {"x": x, "y": y, "width": rect["width"] + 2 * margin, "height": rect["height"] + 2 * margin, "scale": 1}
        shot = self._call("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True}, page=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def _scrolled(self) -> float:
        return self._call("Runtime.evaluate", {"expression": "window.scrollY"}, page=True)["result"]["value"]


def measure(url: str, width: int, dark: bool = False, timeout: float = 60) -> dict[str, Any]:
    """One page's measurements (`Browser.load`) in a fresh browser, at a laptop's metrics `width` px wide, or a phone's
    when `width` is under 500 px."""
    device = (width, PHONE[1], True) if width < 500 else (width, LAPTOP[1], False)
    with Browser(timeout) as browser:
        return browser.load(url, device, dark)
