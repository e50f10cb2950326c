"""Shared test setup. Tests never reach a network host: only loopback connections are allowed."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The CLI's rich consoles take their width when first used: fixed here, so what a table test
# sees does not depend on which test happened to use the console first (or on the terminal).
os.environ["COLUMNS"] = "200"
os.environ.pop("LINES", None)

_real_connect = socket.socket.connect
_LOOPBACK = ("127.", "::1", "localhost")


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = str(address[0])
        if not host.startswith(_LOOPBACK):
            raise RuntimeError(f"tests must not reach the network (tried {host})")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


@pytest.fixture(autouse=True)
def _isolated_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.delenv("XCLAW_MODEL", raising=False)
    monkeypatch.delenv("XCLAW_DATABASE_URL", raising=False)
    monkeypatch.delenv("XCLAW_REDIS_URL", raising=False)  # tests choose their store


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """An empty project root (resolved, so symlinked /tmp layouts compare equal)."""
    d = tmp_path / "proj"
    d.mkdir()
    yield d.resolve()


# The longest tests (a real model's runs, a SIGKILL at random points, full browser scenarios)
# start first: on two workers, one of them at the end would leave the other idle for a minute.
SLOW_FIRST = (
    "tests/models/test_local_e2e.py",
    "tests/durability/test_fault_injection.py",
    "tests/browser/test_cli_end_to_end.py",
    "tests/browser/test_cli_web_scenarios.py",
    "tests/gateway/test_serve_memory.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return next((i for i, slow in enumerate(SLOW_FIRST) if path == slow), len(SLOW_FIRST))

    items.sort(key=rank)  # stable: the rest keep their order
