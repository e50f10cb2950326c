"""`xclaw login` against the fixture site, and what `xclaw doctor` says about the browser."""

from __future__ import annotations

import os
import subprocess
import sys

from fixture_server import FixtureSite
from web_support import TEST_ARGS, needs_browser

pytestmark = needs_browser


def _login(url: str, timeout_s: int = 30) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "xclaw", "login", "--base-url", url, "--headless"]
    env = {**os.environ, "XCLAW_BROWSER_ARGS": " ".join(TEST_ARGS), "COLUMNS": "200"}
    return subprocess.Popen(
        [*argv, "--timeout", str(timeout_s)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def test_login_headless_and_signed_out_says_at_once_that_it_needs_a_window(
    either_site: FixtureSite,
) -> None:
    site = either_site  # the 2025 and the 2026 page
    site.configure(auth="out")
    proc = _login(site.url, timeout_s=60)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "WEB_LOGIN_REQUIRED" in out, out
    flat = " ".join(out.split())
    assert "without --headless" in flat and "browser window that opened" not in flat


def test_login_when_already_signed_in_says_so_at_once(site: FixtureSite) -> None:
    proc = _login(site.url)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "logged in" in out and "Sign in to ChatGPT" not in out


def test_doctor_names_the_browser_and_the_login_state() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "xclaw", "doctor"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    ).stdout
    assert "browser" in out and "chromium" in out.lower()
    assert "chatgpt login" in out and "xclaw login" in out
