"""What the browser tests share: quiet Chromium flags, short timeouts, options for the fixture
site, and an event sink. (A module of its own: test files import it; conftest only holds fixtures.)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from fixture_server import FixtureSite

from xclaw.browser import CONTAINER_ARGS, BrowserOptions, find_browser
from xclaw.core.errors import ConfigError
from xclaw.models.chatgpt_web import ChatGPTWebOptions, WebTimeouts

TEST_ARGS = CONTAINER_ARGS
# Short enough for a quick suite, long enough for two slow cores.
FAST = WebTimeouts(
    poll_s=0.05,
    stable_window_s=0.2,
    finished_polls=3,
    page_load_s=5.0,
    controls_s=2.0,
    action_s=5.0,
    new_turn_s=5.0,
    turn_s=20.0,
    quiet_s=1.5,
    copy_s=0.5,
    menu_s=0.3,
    challenge_grace_s=0.6,
    banner_grace_s=0.2,
    takeover_s=10.0,
    login_s=5.0,
)


def _browser() -> str | None:
    try:
        return str(find_browser(os.environ.get("XCLAW_TEST_BROWSER") or None))
    except ConfigError:
        return None


BROWSER = _browser()


def _require_browser() -> None:
    # Never skipped: `make deps` installs Debian's chromium, and these tests must run for real.
    if BROWSER is None:
        pytest.fail("No Chrome or Chromium found: run `make deps` (it installs chromium).")


needs_browser = pytest.mark.usefixtures("require_browser")


def browser_options(profile: Path) -> BrowserOptions:
    return BrowserOptions(
        site="test", executable=BROWSER, profile=profile, headless=True, args=TEST_ARGS
    )


def web_options(
    site: FixtureSite, profile: Path | None = None, **changes: Any
) -> ChatGPTWebOptions:
    """Options for the fixture site; ``profile`` only matters when the transport launches.
    Takeovers wait by default even though the browser is headless: the tests act as the
    person (through the site's controls); ``headless_takeover="fail"`` is what users get."""
    changes.setdefault("headless_takeover", "wait")
    return ChatGPTWebOptions(
        base_url=site.url,
        browser=browser_options(profile) if profile else BrowserOptions(),
        timeouts=changes.pop("timeouts", FAST),
        **changes,
    )


class Events:
    """An ``on_event`` sink that keeps what it is told."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, payload: dict[str, Any]) -> None:
        self.seen.append((kind, payload))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [payload for k, payload in self.seen if k == kind]
