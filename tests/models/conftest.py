"""Fixtures for adapter tests: a real local HTTP server playing scripted provider responses."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from wire_server import WireServer


@pytest.fixture
def wire() -> Iterator[WireServer]:
    """A started ``WireServer``; its ``url`` is the base URL to hand an adapter."""
    with WireServer() as server:
        yield server


@pytest.fixture
def make_wire() -> Iterator[Callable[[], WireServer]]:
    """A factory for more servers in one test (e.g. two providers for failover)."""
    servers: list[WireServer] = []

    def make() -> WireServer:
        server = WireServer().start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()
