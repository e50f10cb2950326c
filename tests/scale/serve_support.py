"""Real ``xclaw serve`` processes (scripted models) on one store and one Redis, and a small
WebSocket client that reads frames until it sees what it waits for."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from redis_support import _free_port
from websockets.asyncio.client import ClientConnection, connect

from xclaw.gateway.auth import gateway_token_path, load_gateway_token

Frame = dict[str, Any]


def exec_turn(mark: str) -> Frame:
    """A model turn that appends ``mark`` to out.txt (asks for approval in host mode)."""
    argv = ["-c", f"echo {mark} >> out.txt"]
    call = {"id": "call_1", "name": "terminal.exec", "arguments": {"program": "sh", "argv": argv}}
    return {"text": "Running it.", "tool_calls": [call]}


def write_script(path: Path, turns: list[Frame | str]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


@dataclass
class Instance:
    proc: asyncio.subprocess.Process
    port: int
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)

    def term(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
        await asyncio.wait_for(self.proc.wait(), 15)


def token() -> str:
    """The gateway token every instance shares (made once, before they start)."""
    return load_gateway_token(gateway_token_path())[0]


async def start(
    root: Path, script: Path, log: Path, *, env: dict[str, str], extra: tuple[str, ...] = ()
) -> Instance:
    port = _free_port()
    argv = ["serve", "--port", str(port), "-C", str(root), "-m", f"scripted:{script}"]
    argv += ["--sandbox", "host", "--no-memory", *extra]
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "xclaw",
            *argv,
            stdout=out,
            stderr=out,
            env={**os.environ, "NO_COLOR": "1", **env},
        )
    return Instance(proc, port, log)


async def wait_ready(*instances: Instance) -> None:
    async with httpx.AsyncClient() as http:
        for inst in instances:
            for _ in range(300):
                if inst.proc.returncode is not None:
                    raise AssertionError(f"xclaw serve exited: {inst.log.read_text()[-3000:]}")
                try:
                    if (await http.get(f"{inst.base}/readyz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)
            else:
                raise AssertionError(f"xclaw serve never got ready: {inst.log.read_text()[-3000:]}")


@dataclass
class Client:
    ws: ClientConnection
    session: str
    seen: list[Frame] = field(default_factory=list)

    async def send(self, frame: Frame) -> None:
        await self.ws.send(json.dumps(frame))

    async def until(self, done: Callable[[Frame], bool], wait: float = 20.0) -> list[Frame]:
        """Frames read until one satisfies ``done`` (that one included)."""
        got: list[Frame] = []
        while True:
            frame = json.loads(await asyncio.wait_for(self.ws.recv(), wait))
            got.append(frame)
            self.seen.append(frame)
            if done(frame):
                return got


async def client(inst: Instance, session: str | None = None) -> Client:
    query = f"?session={session}" if session else ""
    ws = await connect(inst.ws + query, additional_headers={"Authorization": f"Bearer {token()}"})
    first = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert first["type"] == "session", first
    return Client(ws, str(first["sessionId"]))


def is_type(kind: str) -> Callable[[Frame], bool]:
    return lambda frame: frame["type"] == kind


def deltas(frames: list[Frame]) -> str:
    return "".join(f["text"] for f in frames if f["type"] == "delta")
