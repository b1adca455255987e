"""Headless Chromium (Debian's package) opening pages: each page's screenshot and its DOM.

One Chromium serves a test module (`Browser`, driven over the DevTools protocol on a pipe): each page opens
in a new tab of the window size asked for, is screenshot once it has loaded, and its DOM read, as
`chromium --screenshot --dump-dom` does for one page per launch (a launch costs about a second of CPU)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import zlib
from pathlib import Path

import pytest

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: `make services` installs Debian's chromium package")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


class Browser:
    """One headless Chromium; `open_page` may be called from several threads (each page in its own tab)."""

    def __enter__(self) -> "Browser":
        self.profile = tempfile.TemporaryDirectory(prefix="gpudash-chromium-")
        commands, self._to_browser = os.pipe()  # Chromium reads commands on its fd 3 ...
        self._from_browser, answers = os.pipe()  # ... and writes answers and events on its fd 4
        self.process = subprocess.Popen(
            ["bash", "-c", f'exec "$0" "$@" 3<&{commands} 4>&{answers}', chromium(), *FLAGS,
             f"--user-data-dir={self.profile.name}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(commands, answers), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(Path(self.profile.name) / "stderr.txt", "wb"))
        os.close(commands)
        os.close(answers)
        self._lock = threading.Lock()
        self._next_id = 0
        self._waiting: dict = {}  # message id or (session, event) -> [threading.Event, message]
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._send("Browser.close", {}, None)
        except OSError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        self._reader.join(timeout=5)
        self.profile.cleanup()

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._from_browser, "rb", buffering=0) as stream:
            while chunk := stream.read(1 << 16):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for raw in messages:
                    message = json.loads(raw)
                    key = message["id"] if "id" in message else (message.get("sessionId"), message.get("method"))
                    with self._lock:
                        slot = self._waiting.get(key)
                    if slot is not None:
                        slot[1] = message
                        slot[0].set()
        with self._lock:  # the browser is gone: wake whoever still waits
            for slot in self._waiting.values():
                slot[0].set()

    def _expect(self, key) -> list:
        slot = [threading.Event(), None]
        with self._lock:
            self._waiting[key] = slot
        return slot

    def _wait(self, key, slot: list, what: str) -> dict:
        if not slot[0].wait(60) or slot[1] is None:
            stderr = (Path(self.profile.name) / "stderr.txt").read_text(errors="replace")[-2000:]
            raise AssertionError(f"Chromium did not answer {what}" + (
                f" (it exited {self.process.returncode}): {stderr}" if self.process.poll() is not None else ""))
        with self._lock:
            del self._waiting[key]
        if "error" in slot[1]:
            raise AssertionError(f"Chromium refused {what}: {slot[1]['error']}")
        return slot[1].get("result", slot[1].get("params", {}))

    def _send(self, method: str, params: dict, session: str | None):
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        slot = self._expect(ident)
        message = {"id": ident, "method": method, "params": params, **({"sessionId": session} if session else {})}
        with self._lock:
            os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return ident, slot

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        ident, slot = self._send(method, params or {}, session)
        return self._wait(ident, slot, method)

    def open_page(self, page: Path, screenshot: Path, width: int = 1640, height: int = 1400) -> str:
        """The page in a new tab of that size: its screenshot written to `screenshot`, its DOM returned."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        try:
            self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                             "deviceScaleFactor": 1, "mobile": False}, session)
            self.call("Page.enable", {}, session)
            loaded = self._expect((session, "Page.loadEventFired"))
            navigated = self.call("Page.navigate", {"url": page.resolve().as_uri()}, session)
            assert "errorText" not in navigated, navigated
            self._wait((session, "Page.loadEventFired"), loaded, "loading the page")
            shot = self.call("Page.captureScreenshot", {"format": "png"}, session)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            dom = self.call("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                                 "returnByValue": True}, session)
            return dom["result"]["value"]
        finally:
            self.call("Target.closeTarget", {"targetId": target})


def distinct_rows(png: Path) -> int:
    """How many different pixel rows the (filtered) PNG image holds: 1 or 2 for a blank page."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, idat, width, height, bpp = 8, [], 0, 0, 4
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            bpp = {2: 3, 6: 4, 0: 1, 4: 2}[colour] * depth // 8
        elif kind == b"IDAT":
            idat.append(body)
        offset += 12 + length
    raw = zlib.decompress(b"".join(idat))
    stride = 1 + width * bpp
    assert len(raw) == stride * height, "the PNG image data is incomplete"
    return len({raw[i * stride:(i + 1) * stride] for i in range(height)})
