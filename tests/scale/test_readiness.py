"""``/readyz``: true while the gateway takes messages; false (503) when it drains, when its
store does not answer, or when its Redis does not answer; nothing but the verdict, no auth."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from redis_support import RedisServer, start_redis

from xclaw import Agent, ScriptedModel
from xclaw.core.events import EventBus
from xclaw.core.tooling import Approver
from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.fanout import RedisFanout
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.server import GatewayServer, create_app
from xclaw.store.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(30)


def gateway(root: Path, store: SqliteStore, redis_url: str | None = None) -> Gateway:
    def make_agent(bus: EventBus, approver: Approver, _origin: object) -> Agent:
        return Agent(ScriptedModel(["hi"]), root, approval=approver, bus=bus, store=store)

    fanout = RedisFanout(redis_url) if redis_url else None
    return Gateway(make_agent, store, workdir=root, fanout=fanout)


def test_ready_until_draining_or_the_store_is_gone(root: Path, tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "x.db")
    gw = gateway(root, store)
    server = GatewayServer(create_app(gw, GatewayAuth(token="t" * 32))).start()
    try:
        ready = httpx.get(f"{server.url}/readyz")
        assert (ready.status_code, ready.json()) == (200, {"ready": True})
        gw.draining = True
        ready = httpx.get(f"{server.url}/readyz")
        assert (ready.status_code, ready.json()) == (503, {"ready": False})
        gw.draining = False
        store.close()
        (tmp_path / "x.db").unlink()
        (tmp_path / "x.db").mkdir()  # the file is gone and cannot come back
        ready = httpx.get(f"{server.url}/readyz")
        assert (ready.status_code, ready.json()) == (503, {"ready": False})
    finally:
        server.stop()


def test_not_ready_while_redis_is_away(root: Path, tmp_path: Path) -> None:
    redis: RedisServer = start_redis()
    store = SqliteStore(tmp_path / "x.db")
    server = GatewayServer(
        create_app(gateway(root, store, redis.url), GatewayAuth(token="t" * 32))
    ).start()
    try:
        assert httpx.get(f"{server.url}/readyz").json() == {"ready": True}
        redis.stop()
        ready = httpx.get(f"{server.url}/readyz", timeout=10)
        assert (ready.status_code, ready.json()) == (503, {"ready": False})
        assert httpx.get(f"{server.url}/healthz").json() == {"ok": True}  # alive all the same
    finally:
        server.stop()
        redis.stop()
        store.close()
