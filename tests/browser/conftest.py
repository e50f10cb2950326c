"""Fixtures for the browser tests: the loopback fixture site and a real headless Chromium.

One fixture server serves the whole session (each test resets its state through ``site``);
one browser serves each module (``shared_browser``, on the module's event loop), since a
launch costs a second or two. Tests that kill or relaunch a browser start their own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from fixture_server import FixtureSite
from site_fixtures import (  # noqa: F401 - fixtures
    either_site_fixture,
    fixture_site_2026_fixture,
    fixture_site_fixture,
    site_2026_fixture,
    site_fixture,
)
from web_support import BROWSER, browser_options, web_options

from xclaw.browser import BrowserManager
from xclaw.models.chatgpt_web import ChatGPTWebTransport


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_browser(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[BrowserManager]:
    if BROWSER is None:  # never skipped: `make deps` installs chromium
        pytest.fail("No Chrome or Chromium found: run `make deps` (it installs chromium).")
    manager = BrowserManager(browser_options(tmp_path_factory.mktemp("profile")))
    yield manager
    await manager.close()


@pytest.fixture
def make_transport(site: FixtureSite, shared_browser: BrowserManager) -> Any:
    """Transports on the module's browser: ``make_transport(mode=..., on_takeover=...)``."""

    def make(**kwargs: Any) -> ChatGPTWebTransport:
        hooks = {k: kwargs.pop(k) for k in ("on_takeover", "on_event", "on_delta") if k in kwargs}
        return ChatGPTWebTransport(web_options(site, **kwargs), manager=shared_browser, **hooks)

    return make


@pytest.fixture
def make_transport_2026(site_2026: FixtureSite, shared_browser: BrowserManager) -> Any:
    """``make_transport`` for the 2026 site."""

    def make(**kwargs: Any) -> ChatGPTWebTransport:
        hooks = {k: kwargs.pop(k) for k in ("on_takeover", "on_event", "on_delta") if k in kwargs}
        options = web_options(site_2026, **kwargs)
        return ChatGPTWebTransport(options, manager=shared_browser, **hooks)

    return make


@pytest.fixture
def require_browser() -> None:
    from web_support import _require_browser

    _require_browser()
