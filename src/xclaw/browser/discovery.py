"""Finding an installed Chromium-family browser (Chrome, Chromium, Edge, Brave).

Order: an explicit path, then ``XCLAW_BROWSER``, then the usual install places of the
platform. We drive the user's own browser build rather than a downloaded one, so nothing is
fetched at run time and the user can update it like any other program.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from xclaw.core.errors import ConfigError

BROWSER_ENV = "XCLAW_BROWSER"
# For a headless browser in a container or CI, often as root (hence no sandbox of its own),
# on a closed network: without the background-networking flags Chromium calls home.
CONTAINER_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

_LINUX_COMMANDS = (
    "google-chrome",
    "google-chrome-stable",
    "chromium",
    "chromium-browser",
    "microsoft-edge",
    "microsoft-edge-stable",
    "brave-browser",
)
_LINUX_PATHS = ("/snap/bin/chromium", "/opt/google/chrome/chrome")
_MAC_APPS = (
    "Google Chrome.app/Contents/MacOS/Google Chrome",
    "Chromium.app/Contents/MacOS/Chromium",
    "Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
    "Brave Browser.app/Contents/MacOS/Brave Browser",
)
_WINDOWS_ROOTS = ("PROGRAMFILES", "PROGRAMFILES(X86)", "LOCALAPPDATA")
_WINDOWS_APPS = (
    r"Google\Chrome\Application\chrome.exe",
    r"Chromium\Application\chrome.exe",
    r"Microsoft\Edge\Application\msedge.exe",
    r"BraveSoftware\Brave-Browser\Application\brave.exe",
)


def browser_candidates(
    platform: str | None = None, env: Mapping[str, str] | None = None
) -> list[Path]:
    """Where a browser usually lives on ``platform`` (``sys.platform`` by default), best first."""
    platform = platform or sys.platform
    env = os.environ if env is None else env
    if platform == "darwin":
        roots = [Path("/Applications"), Path(env.get("HOME", "~")).expanduser() / "Applications"]
        return [root / app for app in _MAC_APPS for root in roots]
    if platform.startswith("win"):
        bases = [env[name] for name in _WINDOWS_ROOTS if env.get(name)]
        return [Path(base) / app for app in _WINDOWS_APPS for base in bases]
    found = [shutil.which(cmd, path=env.get("PATH")) for cmd in _LINUX_COMMANDS]
    return [Path(p) for p in found if p] + [Path(p) for p in _LINUX_PATHS]


def find_browser(
    explicit: str | Path | None = None,
    *,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """The browser executable to launch; ``ConfigError`` BROWSER_NOT_FOUND when there is none."""
    env = os.environ if env is None else env
    chosen = str(explicit) if explicit else env.get(BROWSER_ENV, "").strip()
    if chosen:
        path = Path(chosen).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return path
        where = "the configured path" if explicit else BROWSER_ENV
        raise ConfigError(
            f"{where} names {chosen}, which is not an executable file.",
            code="BROWSER_NOT_FOUND",
            hint=f"Point {BROWSER_ENV} at Chrome or Chromium, or unset it to search.",
        )
    for path in browser_candidates(platform, env):
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise ConfigError(
        "No Chrome, Chromium, Edge or Brave installation was found.",
        code="BROWSER_NOT_FOUND",
        hint=f"Install Google Chrome or Chromium, or set {BROWSER_ENV}=/path/to/chrome.",
    )
