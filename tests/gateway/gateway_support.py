"""A real gateway on a free loopback port with scripted models, and a small WS client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from xclaw import Agent, ScriptedModel
from xclaw.core.events import EventBus
from xclaw.core.tooling import Approver
from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.server import GatewayServer, create_app
from xclaw.sandbox import make_sandbox
from xclaw.store.sqlite import open_store

TOKEN = "gateway-test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
Script = list[dict[str, Any] | str]


def exec_turn(mark: str) -> dict[str, Any]:
    """A turn that runs a shell command (which asks for approval in host mode)."""
    argv = ["-c", f"echo {mark} > out.txt; echo {mark}"]
    call = {"id": "call_1", "name": "terminal.exec", "arguments": {"program": "sh", "argv": argv}}
    return {"text": "Running it.", "tool_calls": [call]}


def scripted_gateway(
    root: Path,
    script: Script | Callable[[], Script],
    store: Any,
    *,
    approval_timeout: float = 10.0,
) -> Gateway:
    """A gateway whose every session runs ``script`` with a scripted model, in host mode."""

    def make_agent(bus: EventBus, approver: Approver, _origin: object) -> Agent:
        turns = script() if callable(script) else list(script)
        return Agent(
            ScriptedModel(turns),
            root,
            approval=approver,
            bus=bus,
            store=store,
            evidence_gate_enabled=False,
            sandbox=lambda: make_sandbox("host").sandbox,  # host mode: commands ask first
        )

    return Gateway(make_agent, store, workdir=root, approval_timeout=approval_timeout)


@contextmanager
def serving(
    root: Path,
    script: Script | Callable[[], Script],
    *,
    approval_timeout: float = 10.0,
    log_level: str = "warning",
) -> Iterator[GatewayServer]:
    store = open_store()
    gateway = scripted_gateway(root, script, store, approval_timeout=approval_timeout)
    app = create_app(gateway, GatewayAuth(token=TOKEN))
    server = GatewayServer(app, log_level=log_level).start()
    try:
        yield server
    finally:
        server.stop()
        store.close()


async def client(server: GatewayServer, query: str = "") -> tuple[ClientConnection, str]:
    """An authenticated WS client and its session id (from the first frame)."""
    ws = await connect(server.ws_url + query, additional_headers=AUTH)
    first = json.loads(await asyncio.wait_for(ws.recv(), 5))
    assert first["type"] == "session", first
    return ws, str(first["sessionId"])


async def until(ws: ClientConnection, kind: str, wait: float = 10.0) -> list[dict[str, Any]]:
    """Frames up to and including the first of type ``kind``."""
    frames: list[dict[str, Any]] = []
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), wait))
        frames.append(frame)
        if frame["type"] == kind:
            return frames


async def send(ws: ClientConnection, **frame: Any) -> None:
    await ws.send(json.dumps(frame))
