"""The fixture-site fixtures, shared by tests/browser and tests/bridge (each conftest imports
them): one server per session, reset by ``site`` before each test that uses it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fixture_server import FixtureSite


@pytest.fixture(scope="session", name="fixture_site")
def fixture_site_fixture() -> Iterator[FixtureSite]:
    site = FixtureSite().start()
    yield site
    site.stop()


@pytest.fixture(name="site")
def site_fixture(fixture_site: FixtureSite) -> FixtureSite:
    """The fixture site, reset: signed in, no challenge, nothing queued."""
    fixture_site.reset()
    return fixture_site
