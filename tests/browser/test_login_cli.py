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


def test_login_waits_for_a_manual_sign_in_and_confirms_it(site: FixtureSite) -> None:
    site.configure(auth="out")
    proc = _login(site.url)
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:  # sign in only once the command says it is waiting for it
        seen.append(line)
        if "Sign in to ChatGPT" in line:
            break
    site.configure(auth="in")
    out, _ = proc.communicate(timeout=120)
    out = "".join(seen) + out
    assert proc.returncode == 0, out
    assert "Sign in to ChatGPT" in out and "logged in" in out


def test_login_when_already_signed_in_says_so_at_once(site: FixtureSite) -> None:
    proc = _login(site.url)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "logged in" in out and "Sign in to ChatGPT" not in out


def test_login_that_never_happens_ends_with_a_coded_error(site: FixtureSite) -> None:
    site.configure(auth="out")
    proc = _login(site.url, timeout_s=3)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "WEB_LOGIN_REQUIRED" in out, out


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
