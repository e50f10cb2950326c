"""Many sessions at once on a real gateway: every turn completes and no client ever sees a frame
of another session (the load benchmark's check, small enough to run on every test pass)."""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from gateway_support import AUTH, TOKEN
from websockets.asyncio.client import connect

from xclaw import Agent
from xclaw.core.events import EventBus
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import ModelRequest
from xclaw.core.tooling import Approver
from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.server import GatewayServer, create_app
from xclaw.models.base import ModelTurn
from xclaw.models.scripted import FunctionModel
from xclaw.sandbox import make_sandbox
from xclaw.store.base import SessionRecord, WriteBatch
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(60)

SESSIONS = 30
NONCE = re.compile(r"nonce-[0-9a-f]{16}")


def echo_turn(messages: Sequence[Message], _request: ModelRequest) -> ModelTurn:
    """Reads a file first, then answers quoting the nonce of the latest user message."""
    if messages[-1].role == "user":
        return ModelTurn("Reading. ", (ToolCallPart("c1", "fs.read", {"path": "notes.txt"}),))
    users = [m.text for m in messages if m.role == "user"]
    found = NONCE.search(users[-1])
    return ModelTurn(f"Answer for {found.group(0) if found else 'nobody'}.")


@pytest.fixture
def server(root: Path) -> Iterator[GatewayServer]:
    (root / "notes.txt").write_text("notes\n")
    store = open_store()

    def make_agent(bus: EventBus, approver: Approver, _origin: object) -> Agent:
        return Agent(
            FunctionModel(echo_turn),
            root,
            approval=approver,
            bus=bus,
            store=store,
            evidence_gate_enabled=False,
            sandbox=lambda: make_sandbox("host").sandbox,
        )

    gateway = Gateway(make_agent, store, workdir=root)
    running = GatewayServer(create_app(gateway, GatewayAuth(token=TOKEN))).start()
    try:
        yield running
    finally:
        running.stop()
        store.close()


async def _session(url: str, turns: int) -> dict[str, Any]:
    """One client: ``turns`` messages, each with its own nonce; every frame it got."""
    async with connect(url, additional_headers=AUTH) as ws:
        first = json.loads(await asyncio.wait_for(ws.recv(), 10))
        frames: list[dict[str, Any]] = []
        nonces = [f"nonce-{secrets.token_hex(8)}" for _ in range(turns)]
        for nonce in nonces:
            content = f"What do the notes say? ({nonce})"
            await ws.send(json.dumps({"type": "message", "content": content}))
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 20))
                frames.append(frame)
                if frame["type"] in ("reply", "error"):
                    break
    return {"sid": first["sessionId"], "nonces": nonces, "frames": frames}


async def test_concurrent_sessions_see_only_their_own_frames(server: GatewayServer) -> None:
    results = await asyncio.gather(*(_session(server.ws_url, 2) for _ in range(SESSIONS)))
    assert len({r["sid"] for r in results}) == SESSIONS
    for r in results:
        foreign = [f for f in r["frames"] if f.get("sessionId") != r["sid"]]
        assert foreign == []
        replies = [f for f in r["frames"] if f["type"] == "reply"]
        assert [f["status"] for f in replies] == ["completed", "completed"]
        assert [f["text"] for f in replies] == [f"Answer for {n}." for n in r["nonces"]]
        streamed = "".join(f["text"] for f in r["frames"] if f["type"] == "delta")
        assert NONCE.findall(streamed) == r["nonces"]  # no other session's words
        tools = [f["event"]["type"] for f in r["frames"] if f["type"] == "event"]
        assert tools.count("tool.completed") == 2


def test_a_new_session_never_reuses_a_live_or_recorded_id(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store()
    try:
        record = SessionRecord("recorded", str(root), "t", "m", "success", "DONE", 1.0, 1.0)
        store.commit(WriteBatch("recorded", create=record))
        gateway = Gateway(lambda bus, approver, origin: None, store, workdir=root)  # type: ignore[arg-type,return-value]
        ids = iter(["taken-live", "taken-live", "recorded", "fresh"])
        monkeypatch.setattr("xclaw.gateway.gateway.new_web_session_id", lambda: next(ids))
        first = gateway.open_session("web", "caller-a")
        second = gateway.open_session("web", "caller-b")
    finally:
        store.close()
    assert (first.id, first.owner) == ("taken-live", "caller-a")
    assert (second.id, second.owner) == ("fresh", "caller-b")
