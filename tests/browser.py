"""Built pages as a browser lays them out (Debian's Chromium, headless, at a laptop's or a phone's device metrics): how
many pixels of each table are hidden behind its scroll box and whether it shows the scroll cue or is stacked, whether
the page itself scrolls sideways, each figure's shown and natural size, where the first paragraph of prose starts,
the lines each output prints, and the contrast of each tab label against what is behind it, light or dark.

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
  const out = {tabs: []};
  document.querySelectorAll(".sd-tab-set > label").forEach((l) => {
    const a = lum(rgb(getComputedStyle(l).color)), b = lum(behind(l));
    out.tabs.push({label: l.textContent.trim(), contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)});
  });
  style(".sd-tab-content { display: block !important; }"); // every tab open, as a reader who opens each one sees it
  const images = [...document.querySelectorAll("article img")];
  images.forEach((i) => { i.loading = "eager"; });
  await Promise.all(images.map((i) => i.decode().catch(() => null)));
  window.dispatchEvent(new Event("resize")); // the page's scripts fit the tables that the open tabs show
  const width = document.documentElement.clientWidth;
  out.page = document.documentElement.scrollWidth - width;
  const boxed = ".pst-scrollable-table-container, pre, .bd-sidebar-primary, .bd-sidebar-secondary";
  const past = (e) => e.getBoundingClientRect().right > width + 1 && !e.closest(boxed);
  out.wide = [...document.querySelectorAll("article *")].filter((e) => past(e) && ![...e.children].some(past))
    .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className}: ${(e.textContent || "").trim().slice(0, 60)}`);
  out.tables = [...document.querySelectorAll("article table")].map((t) => {
    const box = t.closest(".pst-scrollable-table-container") || t.parentElement;
    const caption = ((t.querySelector("caption") || {}).textContent || "").replace(/#$/, "").trim();
    return {caption: caption.slice(0, 80), hidden: box.scrollWidth - box.clientWidth, cue: box.classList.contains("book-scrolls"),
      stacked: box.classList.contains("book-stacked")};
  });
  out.figures = images.map((i) => { const r = i.getBoundingClientRect();
    return {src: new URL(i.currentSrc || i.src).pathname, natural: [i.naturalWidth, i.naturalHeight], shown: [r.width, r.height]}; });
  out.outputs = [...document.querySelectorAll(".cell_output pre")].map((p) => p.textContent); // folded outputs too
  const prose = document.querySelector("article section > p");
  out.prose = prose ? prose.getBoundingClientRect().top + window.scrollY : null;
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
        """Open a measuring page (`serve`) in a viewport of `device`'s metrics, light or dark: `page` (px the page scrolls
        sideways) and `wide` (the first elements that reach past the window, outside scroll boxes), `tables` (caption,
        px hidden, scroll cue, stacked), `figures` (image path, natural and shown size), `outputs` (each output's text),
        `prose` (px from the top to the first paragraph of the page's text) and `tabs` (label, contrast ratio)."""
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
        """Save the loaded page as PNG: the whole page, or the element a JavaScript expression gives, with a margin."""
        target = element or "document.documentElement"
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
