"""Fixtures for the ``full`` sandbox tests: a fake E2B service on 127.0.0.1 and its settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_e2b import FakeE2B

from xclaw.sandbox.remote import E2BSettings

API_KEY = "e2b_fake0123456789abcdef"


@pytest.fixture
def fake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeE2B]:
    service = FakeE2B(tmp_path_factory.mktemp("vms"), api_key=API_KEY).start()
    yield service
    service.stop()


@pytest.fixture
def settings(fake: FakeE2B) -> E2BSettings:
    """Pointed at the fake the way a self-hosted user would: API URL plus envd URL."""
    return E2BSettings(
        template="xclaw",
        api_key=API_KEY,
        api_url=fake.url,
        sandbox_url=fake.url,
        request_timeout_s=10,
    )
