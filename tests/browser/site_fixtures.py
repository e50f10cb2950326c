"""The fixture-site fixtures, shared by tests/browser and tests/bridge (each conftest imports
them): one server per site and session, reset by ``site`` / ``site_2026`` before each test
that uses it; ``either_site`` runs a test on each of the two pages."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fixture_server import SITE_2026_DIR, FixtureSite


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


@pytest.fixture(scope="session", name="fixture_site_2026_server")
def fixture_site_2026_fixture() -> Iterator[FixtureSite]:
    site = FixtureSite(site_dir=SITE_2026_DIR).start()
    yield site
    site.stop()


@pytest.fixture(name="site_2026")
def site_2026_fixture(fixture_site_2026_server: FixtureSite) -> FixtureSite:
    """The 2026 fixture site, reset."""
    fixture_site_2026_server.reset()
    return fixture_site_2026_server


@pytest.fixture(params=["2025", "2026"], name="either_site")
def either_site_fixture(request: pytest.FixtureRequest) -> FixtureSite:
    """The test runs once on each fixture page (reset)."""
    site: FixtureSite = request.getfixturevalue("site" if request.param == "2025" else "site_2026")
    return site
