"""tests/bridge drive the ChatGPT fixture page of tests/browser (its server and Chromium flags)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_BROWSER_TESTS = str(Path(__file__).resolve().parent.parent / "browser")
if _BROWSER_TESTS not in sys.path:
    sys.path.insert(0, _BROWSER_TESTS)

from site_fixtures import (  # noqa: E402, F401 - the path above; fixtures
    either_site_fixture,
    fixture_site_2026_fixture,
    fixture_site_fixture,
    site_2026_fixture,
    site_fixture,
)


@pytest.fixture
def require_browser() -> None:
    from web_support import _require_browser

    _require_browser()
