"""Fixtures of the browser tool tests: the loopback fixture site, one headless Chromium per
module (a launch costs a second or two) and a fresh session with its own context per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from browser_site import (
    FAST,
    Answers,
    Deps,
    Site,
    browser_executable,
    browser_options,
    fake_resolver,
    project,
)

from xclaw.browser.session import BrowserPool, BrowserSession
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.base import Workspace
from xclaw.tools.browser import browser_registry


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    s = Site().start()
    yield s
    s.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool() -> AsyncIterator[BrowserPool]:
    if browser_executable() is None:  # never skipped: `make deps` installs chromium
        pytest.fail("No Chrome or Chromium found: run `make deps` (it installs chromium).")
    p = BrowserPool(browser_options())
    yield p
    await p.close()


@pytest_asyncio.fixture(loop_scope="module")
async def session(pool: BrowserPool) -> AsyncIterator[BrowserSession]:
    s = BrowserSession(pool, timeouts=FAST, resolver=fake_resolver)
    yield s
    await s.close()


@pytest.fixture
def deps(session: BrowserSession, site: Site, tmp_path: Path) -> Deps:
    """The fixture site is on loopback, which asks unless trusted: the tests trust it the way
    a user does, with ``browsing.allow_hosts`` in their user config."""
    workspace = Workspace(project(tmp_path), output_dir=tmp_path / "out")
    registry = browser_registry(session, allow_hosts=[f"127.0.0.1:{site.port}"])
    return Deps(registry.bind(workspace), PolicyEngine(workspace), Answers(), session=session)
