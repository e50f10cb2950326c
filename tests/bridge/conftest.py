"""tests/bridge drive the ChatGPT fixture page of tests/browser (its server and Chromium flags)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_BROWSER_TESTS = str(Path(__file__).resolve().parent.parent / "browser")
if _BROWSER_TESTS not in sys.path:
    sys.path.insert(0, _BROWSER_TESTS)

from fixture_server import FixtureSite  # noqa: E402 - found through the path set above


@pytest.fixture(scope="session")
def fixture_site() -> Iterator[FixtureSite]:
    site = FixtureSite().start()
    yield site
    site.stop()


@pytest.fixture
def site(fixture_site: FixtureSite) -> FixtureSite:
    """The fixture page, reset: signed in, nothing queued."""
    fixture_site.reset()
    return fixture_site


@pytest.fixture
def require_browser() -> None:
    from web_support import _require_browser

    _require_browser()
