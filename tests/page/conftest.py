"""Shared fixtures for the page-agent tests (every module under tests/page/ may use them).

- ``page_server`` (session): ``PageServer`` serving ``tests/page/fixtures/`` (our own HTML) on
  127.0.0.1 at a free port; ``page_server.url("actions.html")`` addresses a page.
- ``other_origin`` (session): the same fixtures on another port, addressed as ``localhost``
  (a second origin, for cross-origin frames).
- ``chromium`` (module, on the module's event loop): one headless Chromium per test module,
  launched with Playwright from the installed browser (``XCLAW_TEST_BROWSER`` or the usual
  places). A missing browser fails the test; it is never skipped.
- ``page`` (function, module loop): a fresh BrowserContext and Page on that browser.
- ``driver`` (function, module loop): a ``PageDriver`` on ``page``, library installed.
- ``open_fixture``: ``await open_fixture(driver, "actions.html")`` navigates and waits for load.

Helpers test modules import (``page_support``: the browser path, Chromium flags, types) live in
a module of their own, as in tests/browser: conftest only holds fixtures.

Async tests here run on the module's loop:
``pytestmark = pytest.mark.asyncio(loop_scope="module")``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from page_server import PageServer
from page_support import CHROMIUM_ARGS, VIEWPORT, OpenFixture, browser_path
from playwright.async_api import Browser, Page, async_playwright

from xclaw.page import PageDriver


@pytest.fixture(scope="session")
def page_server() -> Iterator[PageServer]:
    server = PageServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def other_origin() -> Iterator[PageServer]:
    """The same fixtures from a second origin: another port, addressed as ``localhost``
    (``page_server`` is ``127.0.0.1``), so a frame from it is cross-origin and cross-site."""
    server = PageServer().start()
    server.base = f"http://localhost:{server.port}/"
    yield server
    server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium() -> AsyncIterator[Browser]:
    executable = browser_path()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=executable, headless=True, args=list(CHROMIUM_ARGS)
        )
        yield browser
        await browser.close()


@pytest_asyncio.fixture(loop_scope="module")
async def page(chromium: Browser) -> AsyncIterator[Page]:
    context = await chromium.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    page = await context.new_page()
    yield page
    await context.close()


@pytest_asyncio.fixture(loop_scope="module")
async def driver(page: Page) -> PageDriver:
    d = PageDriver(page, navigation_timeout_s=10.0)
    await d.install()
    return d


@pytest.fixture
def open_fixture(page_server: PageServer) -> OpenFixture:
    async def open_page(driver: PageDriver, name: str) -> None:
        await driver.navigate("goto", url=page_server.url(name))

    return open_page
