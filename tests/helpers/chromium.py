"""A real headless Chromium for tests of the HTML pages formctl writes (``formctl eval --html``, ...).

The browser is Debian's ``chromium`` package (``.ci/run`` installs it when it is missing, as it
does PostgreSQL); no Playwright or Selenium: Chromium's own ``--dump-dom`` (the document after its
scripts ran, as a reader's browser holds it) and ``--screenshot`` (a PNG of what a reader sees)
are enough to check a self-contained page. Each call starts a fresh browser with a throwaway
profile and nothing that reaches the network (no sync, no component updates, no background
requests), so a page that fetched anything from outside would show it broken.

    from helpers.chromium import browser_page

    page = browser_page(tmp_path / "report.html", tmp_path / "shot.png")
    assert "travel_claim/terse_rail" in page.text

Without Chromium the test is skipped with the reason, except under ``CI=true``, where it fails:
CI must never go green by silently not opening the page.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["DESKTOP", "BrowserPage", "Png", "browser_page", "chromium", "read_png"]

DESKTOP = (1280, 900)  # a desktop window: width × height in CSS pixels
_FLAGS = (
    "--headless",
    "--no-sandbox",  # tests run as root in containers, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--hide-scrollbars",
    "--mute-audio",
)


def chromium() -> str:
    """The Chromium executable, or skip (fail under ``CI=true``) when there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    reason = "no Chromium found (apt-get install -y chromium)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"Chromium is required under CI=true, and {reason}", pytrace=False)
    pytest.skip(f"browser tests skipped: {reason}")


@dataclass(frozen=True)
class BrowserPage:
    """A page as a browser holds it after loading: its DOM (``dom``, HTML text), that DOM's visible
    text on one line per block (``text``), and the screenshot's file when one was taken."""

    dom: str
    screenshot: Path | None

    @property
    def text(self) -> str:
        """The DOM's text without tags, scripts and styles, whitespace folded (what a reader reads)."""
        body = re.sub(r"<(script|style)\b.*?</\1>", " ", self.dom, flags=re.S | re.I)
        body = re.sub(r"<[^>]+>", " ", body)
        return " ".join(html.unescape(body).split())


def _run(args: list[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="formctl-chromium-") as profile:
        command = [chromium(), *_FLAGS, f"--user-data-dir={profile}", *args]
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            pytest.fail(f"Chromium did not finish within {timeout:g}s: {' '.join(command)}", pytrace=False)


def browser_page(
    page: str | os.PathLike[str],
    screenshot: str | os.PathLike[str] | None = None,
    *,
    size: tuple[int, int] = DESKTOP,
    timeout: float = 60.0,
) -> BrowserPage:
    """Open ``page`` (a local HTML file) in a fresh headless Chromium: its DOM after loading, and a
    PNG of the window at ``size`` written to ``screenshot`` when given (two launches: Chromium
    takes one of ``--dump-dom`` and ``--screenshot`` per run)."""
    url = Path(page).resolve().as_uri()
    window = f"--window-size={size[0]},{size[1]}"
    done = _run(["--virtual-time-budget=2000", window, "--dump-dom", url], timeout=timeout)
    if done.returncode != 0 or "<html" not in done.stdout.lower():
        pytest.fail(f"Chromium could not load {url} (exit {done.returncode}): {done.stderr[-2000:]}", pytrace=False)
    shot: Path | None = None
    if screenshot is not None:
        shot = Path(screenshot).resolve()
        shot.unlink(missing_ok=True)
        taken = _run([window, f"--screenshot={shot}", url], timeout=timeout)
        if taken.returncode != 0 or not shot.is_file():
            pytest.fail(f"Chromium took no screenshot of {url} (exit {taken.returncode}): {taken.stderr[-2000:]}")
    return BrowserPage(done.stdout, shot)


@dataclass(frozen=True)
class Png:
    """A decoded PNG (8-bit RGB or RGBA, not interlaced: what Chromium writes): ``pixel(x, y)`` is (r, g, b)."""

    width: int
    height: int
    channels: int
    rows: list[bytes]

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        at = x * self.channels
        r, g, b = self.rows[y][at : at + 3]
        return r, g, b

    def count(self, near: tuple[int, int, int], *, within: int = 24) -> int:
        """How many pixels are within ``within`` of the colour ``near`` on each channel."""
        return sum(
            1
            for row in self.rows
            for at in range(0, len(row), self.channels)
            if all(abs(row[at + i] - near[i]) <= within for i in range(3))
        )


def read_png(path: str | os.PathLike[str]) -> Png:
    """Decode a PNG with the standard library alone (zlib and the five row filters)."""
    import struct
    import zlib

    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    at, header, chunks = 8, b"", []
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"{path}: only 8-bit RGB/RGBA PNGs without interlacing are read here")
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = row[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            row[i] = (row[i] + _predict(kind, left, up, corner)) & 0xFF
        rows.append(bytes(row))
        previous = row
    return Png(width, height, channels, rows)


def _predict(kind: int, left: int, up: int, corner: int) -> int:
    if kind == 1:
        return left
    if kind == 2:
        return up
    if kind == 3:
        return (left + up) // 2
    if kind == 4:
        p = left + up - corner
        pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
        return left if pa <= pb and pa <= pc else up if pb <= pc else corner
    return 0
