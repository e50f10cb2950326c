"""``xclaw chat``: a terminal client of the gateway over WebSocket.

The server never reads the terminal, so approvals never fight it for stdin: this client
prints the model's deltas and tool events, and asks approvals here. One line is one message;
the next line is read once the reply came (or when an approval is asked). Ctrl+C during a
turn sends ``stop``; Ctrl+D (end of input) quits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TextIO
from urllib.parse import quote

import typer

from xclaw.cli.common import fail
from xclaw.core.errors import ConfigError, XclawError

__all__ = ["chat", "run_chat"]

TOKEN_ENV = "XCLAW_GATEWAY_TOKEN"
_ANSWERS = {"o": "once", "y": "once", "once": "once", "t": "task", "task": "task"}


def _client_token(token_file: Path | None) -> str:
    from xclaw.gateway.auth import gateway_token_path, load_gateway_token

    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV].strip()
    path = token_file or gateway_token_path()
    if not path.exists():
        raise ConfigError(
            "No gateway token found.",
            code="GATEWAY_TOKEN_MISSING",
            hint=f"Start `xclaw serve` first, or set {TOKEN_ENV}, or pass --token-file.",
        )
    return load_gateway_token(path)[0]


class _Lines:
    """Lines of ``stream`` read by a daemon thread (so Ctrl+C never waits on a blocked read),
    handed out in order as they are asked for."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.thread: threading.Thread | None = None

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        for line in iter(self.stream.readline, ""):
            loop.call_soon_threadsafe(self.queue.put_nowait, line.rstrip("\n"))
        loop.call_soon_threadsafe(self.queue.put_nowait, None)

    async def next(self) -> str | None:
        if self.thread is None:
            loop = asyncio.get_running_loop()
            self.thread = threading.Thread(target=self._pump, args=(loop,), daemon=True)
            self.thread.start()
        return await self.queue.get()


def _show(frame: dict[str, Any], out: TextIO) -> None:
    kind = frame.get("type")
    if kind == "delta":
        out.write(str(frame.get("text", "")))
    elif kind == "event":
        event = frame.get("event") or {}
        payload = event.get("payload") or {}
        if event.get("type") == "tool.proposed":
            args = json.dumps(payload.get("arguments"), ensure_ascii=False)
            out.write(f"\n[tool] {payload.get('name')} {args}\n")
        elif event.get("type") == "tool.output":
            out.write(str(payload.get("text", "")))
        elif event.get("type") == "tool.completed":
            code = f"{payload['error_code']}: " if payload.get("error_code") else ""
            out.write(f"[tool] {payload.get('name')}: {code}{payload.get('message', '')}\n")
    elif kind == "reply":
        out.write(f"\n[{frame.get('status')}]\n")
    elif kind == "error":
        out.write(f"\nerror {frame.get('code')}: {frame.get('message')}\n")
    out.flush()


async def _turn(ws: Any, lines: _Lines, out: TextIO) -> None:
    """Frames until the reply (or an error); approvals are asked on this terminal."""
    while True:
        frame = json.loads(await ws.recv())
        if frame.get("type") == "approval.request":
            grant = " / t = for this task" if frame.get("grantOffered") else ""
            out.write(f"\napprove? {frame.get('summary')} [{frame.get('risk')}]\n")
            out.write(f"  o = once{grant} / anything else = deny: ")
            out.flush()
            line = (await lines.next() or "").strip().lower()
            answer = _ANSWERS.get(line, "deny")
            if answer == "task" and not frame.get("grantOffered"):
                answer = "once"
            reply = {"type": "approval.response", "requestId": frame["requestId"]}
            await ws.send(json.dumps({**reply, "answer": answer}))
            continue
        _show(frame, out)
        if frame.get("type") in ("reply", "error"):
            return


async def run_chat(url: str, token: str, session: str | None, stdin: TextIO, out: TextIO) -> str:
    """Chat until end of input; returns the session id."""
    from websockets.asyncio.client import connect

    query = f"?session={quote(session)}" if session else "?channel=cli"
    async with connect(url + query, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        first = json.loads(await ws.recv())
        if first.get("type") != "session":
            _show(first, out)
            raise ConfigError(f"The gateway refused the session: {first.get('message')}")
        sid = str(first["sessionId"])
        out.write(f"session {sid} (Ctrl+C stops a turn, Ctrl+D quits)\n")
        lines = _Lines(stdin)
        while (line := await lines.next()) is not None:
            if not line.strip():
                continue
            await ws.send(json.dumps({"type": "message", "content": line, "sessionId": sid}))
            with _stop_on_interrupt(ws, sid, out):
                await _turn(ws, lines, out)
        return sid


@contextlib.contextmanager
def _stop_on_interrupt(ws: Any, sid: str, out: TextIO) -> Iterator[None]:
    """During a turn, Ctrl+C asks the gateway to stop it (at the prompt it quits)."""
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[None]] = set()

    def stop() -> None:
        out.write("\n[stopping]\n")
        out.flush()
        pending.add(loop.create_task(ws.send(json.dumps({"type": "stop", "sessionId": sid}))))

    try:
        loop.add_signal_handler(signal.SIGINT, stop)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def chat(
    url: Annotated[str, typer.Option("--url", help="The gateway's WebSocket.")] = (
        "ws://127.0.0.1:8787/ws"
    ),
    session: Annotated[
        str | None,
        typer.Option("--session", help="Continue this session (default: the project's CLI one)."),
    ] = None,
    token_file: Annotated[Path | None, typer.Option("--token-file")] = None,
) -> None:
    """Chat with a running `xclaw serve` from this terminal (approvals are asked here)."""
    from websockets.exceptions import InvalidStatus, WebSocketException

    try:
        token = _client_token(token_file)
        sid = asyncio.run(run_chat(url, token, session, sys.stdin, sys.stdout))
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except XclawError as err:
        fail(err)
    except (OSError, InvalidStatus, WebSocketException) as err:
        fail(ConfigError(f"Cannot talk to the gateway at {url}: {err}", code="GATEWAY_UNREACHABLE"))
    sys.stdout.write(f"continue with: xclaw chat --session {sid}\n")
