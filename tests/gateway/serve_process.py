"""A real ``xclaw serve`` process on a free loopback port, and a small WebSocket client for it
(tests that kill the gateway and start it again)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from xclaw.gateway.auth import gateway_token_path

Frame = dict[str, Any]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(root: Path, log: Path, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """``xclaw serve -C root --no-memory ARGS`` (model, sandbox...), once it is ready."""
    port = free_port()
    argv = [sys.executable, "-m", "xclaw", "serve", "--port", str(port), "-C", str(root)]
    argv += ["--no-memory", *args]
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=out, env={**os.environ, "NO_COLOR": "1"})
    for _ in range(300):
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                return proc, port
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"xclaw serve never got ready: {log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=15)


def api(port: int, path: str) -> Any:
    token = gateway_token_path().read_text().strip()
    reply = httpx.get(
        f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {token}"}
    )
    reply.raise_for_status()
    return reply.json()


async def connect_to(port: int, session: str | None = None) -> tuple[ClientConnection, str]:
    """An authenticated client (of ``session``, or a new one) and its session id."""
    token = gateway_token_path().read_text().strip()
    query = f"?session={session}" if session else ""
    ws = await connect(
        f"ws://127.0.0.1:{port}/ws{query}", additional_headers={"Authorization": f"Bearer {token}"}
    )
    first = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert first["type"] == "session", first
    return ws, str(first["sessionId"])


async def frames_until(ws: ClientConnection, kind: str, wait: float = 20.0) -> list[Frame]:
    """Frames up to and including the first of type ``kind``."""
    frames: list[Frame] = []
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), wait))
        frames.append(frame)
        if frame["type"] == kind:
            return frames


async def nothing_of(ws: ClientConnection, kind: str, wait: float = 1.5) -> None:
    """No frame of type ``kind`` comes within ``wait`` seconds of silence."""
    try:
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), wait))
            assert frame["type"] != kind, frame
    except TimeoutError:
        return
