"""Headless Chromium (Debian's package) opening a page once: its screenshot and its DOM."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
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


def open_page(page: Path, screenshot: Path, width: int = 1640, height: int = 1400) -> str:
    """One Chromium launch: the page's screenshot written to `screenshot`, its DOM returned."""
    with tempfile.TemporaryDirectory(prefix="gpudash-chromium-") as profile:
        done = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", f"--screenshot={screenshot}",
                               f"--window-size={width},{height}", "--dump-dom", page.resolve().as_uri()],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


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
