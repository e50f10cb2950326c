"""Two gateways (threads of this process, each its own event loop) on one SQLite file and one
Redis: messages sent through either, quickly and interleaved, all run once and in order,
whoever holds the session when each arrives (the lease passes back and forth)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from redis_support import RedisServer
from websockets.asyncio.client import connect

from xclaw import Agent, ScriptedModel
from xclaw.core.events import EventBus
from xclaw.core.tooling import Approver
from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.fanout import RedisFanout
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.server import GatewayServer, create_app
from xclaw.store.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(60)

TOKEN = "scale-test-token-0123456789abcdef"
TURNS = 8


def instance(root: Path, db: Path, redis_url: str) -> tuple[GatewayServer, SqliteStore]:
    store = SqliteStore(db)

    def make_agent(bus: EventBus, approver: Approver, _origin: object) -> Agent:
        return Agent(
            ScriptedModel([f"reply {i}" for i in range(1, TURNS + 1)]),
            root,
            approval=approver,
            bus=bus,
            store=store,
            evidence_gate_enabled=False,
        )

    gateway = Gateway(make_agent, store, workdir=root, fanout=RedisFanout(redis_url))
    return GatewayServer(create_app(gateway, GatewayAuth(token=TOKEN))).start(), store


async def test_interleaved_messages_through_two_instances_run_once_in_order(
    root: Path, tmp_path: Path, redis_server: RedisServer
) -> None:
    db = tmp_path / "shared.db"
    a, store_a = instance(root, db, redis_server.url)
    b, store_b = instance(root, db, redis_server.url)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        ws_a = await connect(a.ws_url, additional_headers=auth)
        sid = json.loads(await ws_a.recv())["sessionId"]
        await ws_a.send(json.dumps({"type": "message", "content": "message 1"}))
        replies_a = [await _reply(ws_a)]  # the session is recorded: b can open it
        ws_b = await connect(f"{b.ws_url}?session={sid}", additional_headers=auth)
        assert json.loads(await ws_b.recv())["type"] == "session"
        for i in range(2, TURNS + 1):  # no waiting: a and b hand the lease to each other
            ws = ws_a if i % 2 else ws_b
            await ws.send(json.dumps({"type": "message", "content": f"message {i}"}))
        replies_a += [await _reply(ws_a) for _ in range(2, TURNS + 1)]
        replies_b = [await _reply(ws_b) for _ in range(2, TURNS + 1)]
        if replies_b[0] == "reply 1":  # a's first reply, published just as b subscribed
            replies_b = replies_b[1:] + [await _reply(ws_b)]
        expected = [f"reply {i}" for i in range(1, TURNS + 1)]
        assert replies_a == expected
        assert replies_b == expected[1:]
        users = [
            item.payload for item in store_a.load_items(sid) if item.payload.get("role") == "user"
        ]
        assert len(users) == TURNS  # every message recorded once
        await ws_a.close()
        await ws_b.close()
    finally:
        a.stop()
        b.stop()
        store_a.close()
        store_b.close()


async def _reply(ws: object) -> str:
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 20))  # type: ignore[attr-defined]
        if frame["type"] in ("reply", "error"):
            assert frame["type"] == "reply", frame
            return str(frame["text"])
