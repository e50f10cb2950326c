"""What the page tests share besides fixtures: the browser to drive, quiet Chromium flags, the
viewport, and the ``open_fixture`` type. (Test modules import this, never conftest.)"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

import pytest

from xclaw.browser import CONTAINER_ARGS, find_browser
from xclaw.core.errors import ConfigError
from xclaw.page import PageDriver

CHROMIUM_ARGS = CONTAINER_ARGS
VIEWPORT = {"width": 1000, "height": 700}
OpenFixture = Callable[[PageDriver, str], Awaitable[None]]


def browser_path() -> str:
    """The Chromium the tests drive; fails the test (never skips) when there is none."""
    try:
        return str(find_browser(os.environ.get("XCLAW_TEST_BROWSER") or None))
    except ConfigError:
        pytest.fail("No Chrome or Chromium found: run `make deps` (it installs chromium).")
