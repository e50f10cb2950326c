"""The dedicated browser is launched as a person's would be, in real headless Chromium.

What a page can see (``navigator.webdriver``, the user agent) is read from the page itself; the
flags are read from the running browser's own command line (``/proc``, through the pid in the
profile's lock link), not from what we meant to pass.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import pytest
from web_support import BROWSER, Events, needs_browser

from xclaw.browser import AUTOMATION_DEFAULTS, BrowserManager, BrowserOptions, plan_launch
from xclaw.browser.launch import browser_major_version, headed_user_agent, running_as_root

# Quiet on a closed network, but none of the flags under test: no --no-sandbox here, the
# manager decides that.
QUIET = ("--disable-gpu", "--disable-quic", "--disable-background-networking", "--disable-sync")
PAGE_PROBE = """() => ({
    webdriver: navigator.webdriver,
    agent: navigator.userAgent,
    brands: (navigator.userAgentData?.brands ?? []).map(b => b.brand),
})"""


def _browser_command_line(profile: Path) -> list[str]:
    owner = os.readlink(profile / "SingletonLock")
    host, _, pid = owner.rpartition("-")
    assert host == socket.gethostname()
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


@needs_browser
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_the_page_sees_a_browser_nobody_drives(tmp_path: Path) -> None:
    events = Events()
    options = BrowserOptions(
        site="launch", executable=BROWSER, profile=tmp_path / "p", headless=True, args=QUIET
    )
    manager = BrowserManager(options, on_event=events)
    try:
        page = await manager.page()
        await page.set_content("<p>hello</p>")
        seen = await page.evaluate(PAGE_PROBE)
        profile = manager.profile
        assert profile is not None
        flags = _browser_command_line(profile)
        profile_mode = stat.S_IMODE(profile.stat().st_mode)
    finally:
        await manager.close()

    assert seen["webdriver"] is False
    assert "HeadlessChrome" not in seen["agent"] and "Headless" not in " ".join(seen["brands"])
    assert BROWSER is not None
    major = browser_major_version(Path(BROWSER))
    assert major is not None and f"Chrome/{major}.0.0.0" in seen["agent"]
    assert "--disable-blink-features=AutomationControlled" in flags
    for flag in AUTOMATION_DEFAULTS:
        assert flag not in flags, flag
    assert ("--no-sandbox" in flags) is running_as_root()  # only where Chromium demands it
    assert "--headless" in flags and f"--user-data-dir={profile}" in flags
    assert profile_mode == 0o700
    (started,) = events.of("browser.started")
    assert started["user_agent"] == seen["agent"] and started["minimized"] is False


def test_the_flags_for_a_person_and_for_root() -> None:
    chromium = Path(BROWSER or "/usr/bin/chromium")
    plan = plan_launch(chromium, ("--lang=fr", "--disable-blink-features=Foo"), headless=False)
    assert plan.args[-2:] == ("--disable-blink-features=Foo,AutomationControlled", "--lang=fr")
    assert "--enable-automation" in plan.ignore_default_args
    assert not any(a.startswith("--user-agent=") for a in plan.args)  # a window: its own UA
    assert plan_launch(chromium, (), headless=False, as_root=False).chromium_sandbox is True
    assert plan_launch(chromium, (), headless=False, as_root=True).chromium_sandbox is False
    mine = plan_launch(chromium, ("--user-agent=Mine/1",), headless=True)
    assert [a for a in mine.args if a.startswith("--user-agent=")] == ["--user-agent=Mine/1"]


def test_the_headless_user_agent_is_the_windowed_one(tmp_path: Path) -> None:
    fake = tmp_path / "chrome"
    fake.write_text("#!/bin/sh\necho 'Google Chrome 151.0.7900.12 '\n")
    fake.chmod(0o755)
    if sys.platform.startswith("win"):
        pytest.skip("reads the version folder there")
    mac = headed_user_agent(fake, "darwin")
    assert mac == (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 "
        "(KHTML, like Gecko) Chrome/151.0.0.0 Safari/537.36"
    )
    assert headed_user_agent(fake, "linux") == mac.replace(
        "Macintosh; Intel Mac OS X 10_15_7", "X11; Linux x86_64"
    )
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\nexit 0\n")
    silent.chmod(0o755)
    assert headed_user_agent(silent) is None
    unknown = plan_launch(silent, (), headless=True)
    assert not any(a.startswith("--user-agent=") for a in unknown.args)


def test_a_window_starts_minimised_unless_asked_to_stay_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("XCLAW_BROWSER_SHOW", raising=False)
    assert BrowserOptions().start_minimized is True
    monkeypatch.setenv("XCLAW_BROWSER_SHOW", "1")
    assert BrowserOptions().start_minimized is False
    assert BrowserOptions(start_minimized=True).start_minimized is True
