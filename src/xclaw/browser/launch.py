"""How the dedicated browser is started so that it looks like a person's, not an automated one.

What the public automation projects that drive a real browser do (patchright, browser-use),
applied to Playwright's own launch:

- Playwright's defaults that a person's browser never has are left out: ``--enable-automation``
  (older Playwright releases pass it), ``--disable-extensions``, ``--disable-default-apps``,
  ``--disable-component-update`` and ``--disable-popup-blocking``.
- ``--disable-blink-features=AutomationControlled``: ``navigator.webdriver`` is false, as in a
  browser nobody drives (Playwright's pipe sets it true otherwise).
- The browser keeps its own sandbox (Playwright adds ``--no-sandbox`` unless told otherwise);
  only as root, where Chromium refuses to start sandboxed, does ``--no-sandbox`` stay.
- Headless, the user agent says ``Chrome/N`` rather than ``HeadlessChrome/N`` (``--user-agent``
  built from the installed browser's major version), so sites see the same browser headed or
  not. When the version cannot be read the page keeps the headless one, and the
  ``browser.started`` event shows which user agent the pages see.

Playwright's other defaults stay, deliberately: ``--password-store=basic`` and
``--use-mock-keychain`` decide how the profile's cookies are encrypted, so changing them would
sign the user out of a profile made earlier.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# A fresh profile would otherwise stop at first-run and default-browser prompts.
BASE_ARGS = ("--no-first-run", "--no-default-browser-check")
AUTOMATION_DEFAULTS = (
    "--enable-automation",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-component-update",
    "--disable-popup-blocking",
)
_BLINK_FEATURES = "--disable-blink-features="
_AUTOMATION_CONTROLLED = "AutomationControlled"
_VERSION = re.compile(r"\b(\d{2,4})\.\d+\.\d+\.\d+\b")
_PLATFORM_TOKENS = {
    "darwin": "Macintosh; Intel Mac OS X 10_15_7",
    "win32": "Windows NT 10.0; Win64; x64",
}
_LINUX_TOKEN = "X11; Linux x86_64"  # what every Linux build reports since the UA reduction


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """What ``launch_persistent_context`` is given besides the profile and the executable."""

    args: tuple[str, ...]
    ignore_default_args: tuple[str, ...]
    chromium_sandbox: bool


def plan_launch(
    executable: Path, extra: Sequence[str], *, headless: bool, as_root: bool | None = None
) -> LaunchPlan:
    """The flags for a browser that looks like a person's; ``extra`` (the user's) come last and
    win, except that a ``--disable-blink-features`` of theirs keeps AutomationControlled."""
    as_root = running_as_root() if as_root is None else as_root
    args = [*BASE_ARGS, *_with_automation_controlled(extra)]
    if headless and not any(a.startswith("--user-agent=") for a in extra):
        agent = headed_user_agent(executable)
        if agent is not None:
            args.append(f"--user-agent={agent}")
    return LaunchPlan(tuple(args), AUTOMATION_DEFAULTS, chromium_sandbox=not as_root)


def _with_automation_controlled(extra: Sequence[str]) -> list[str]:
    # Chromium reads the last --disable-blink-features only, so ours joins the user's.
    theirs = [a for a in extra if a.startswith(_BLINK_FEATURES)]
    rest = [a for a in extra if not a.startswith(_BLINK_FEATURES)]
    features = [f for a in theirs for f in a[len(_BLINK_FEATURES) :].split(",") if f]
    if _AUTOMATION_CONTROLLED not in features:
        features.append(_AUTOMATION_CONTROLLED)
    return [_BLINK_FEATURES + ",".join(dict.fromkeys(features)), *rest]


def running_as_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


def headed_user_agent(executable: Path, platform: str | None = None) -> str | None:
    """The user agent the browser at ``executable`` sends with a window, from its version;
    None when the version cannot be read."""
    major = browser_major_version(executable)
    if major is None:
        return None
    platform = platform or sys.platform
    token = _PLATFORM_TOKENS.get("win32" if platform.startswith("win") else platform, _LINUX_TOKEN)
    agent = (
        f"Mozilla/5.0 ({token}) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{major}.0.0.0 Safari/537.36"
    )
    if "edge" in executable.name.lower():  # msedge.exe, microsoft-edge
        agent += f" Edg/{major}.0.0.0"
    return agent


@cache
def browser_major_version(executable: Path) -> int | None:
    """The major version of the browser at ``executable``: ``--version`` where it prints one,
    the versioned folder beside ``chrome.exe`` on Windows (there ``--version`` opens a window)."""
    if sys.platform.startswith("win"):
        try:
            text = " ".join(p.name for p in executable.parent.iterdir() if p.is_dir())
        except OSError:
            return None
    else:
        try:
            done = subprocess.run(
                [str(executable), "--version"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        text = done.stdout
    found = _VERSION.search(text)
    return int(found.group(1)) if found else None
