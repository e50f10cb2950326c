"""`xclaw serve --approval-timeout`: an unanswered approval is denied after that many seconds
(a real `xclaw serve` process, a real WebSocket client)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner
from websockets.asyncio.client import connect

from xclaw.cli.app import app
from xclaw.gateway.auth import gateway_token_path

pytestmark = pytest.mark.timeout(60)

RUN = {
    "text": "Running it.",
    "tool_calls": [
        {
            "id": "call_1",
            "name": "terminal.exec",
            "arguments": {"program": "sh", "argv": ["-c", "echo ran > ran.txt"]},
        }
    ],
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_healthy(base: str) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(200):
            try:
                if (await http.get(f"{base}/healthz")).json() == {"ok": True}:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    pytest.fail("xclaw serve did not come up")


async def test_an_unanswered_approval_is_denied_after_the_timeout(
    root: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.jsonl"
    lines = [RUN, {"text": "It was not run.", "expect": {"last_ok": False}}]
    script.write_text("".join(json.dumps(t) + "\n" for t in lines))
    port = _free_port()
    argv = ["serve", "--port", str(port), "-C", str(root), "-m", f"scripted:{script}"]
    proc = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "xclaw", *argv, "--sandbox", "host", "--approval-timeout", "1"],
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        await _wait_healthy(f"http://127.0.0.1:{port}")
        token = gateway_token_path().read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        async with connect(f"ws://127.0.0.1:{port}/ws", additional_headers=headers) as ws:
            await ws.send(json.dumps({"type": "message", "content": "run it"}))
            asked = None
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 20))
                if frame["type"] == "approval.request" and asked is None:
                    asked = time.monotonic()
                if frame["type"] in ("reply", "error"):
                    break
            waited = time.monotonic() - (asked or 0)
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 15)
    assert asked is not None, "no approval was asked"
    assert frame["type"] == "reply" and frame["text"] == "It was not run.", frame
    assert 0.8 <= waited < 5, waited  # denied by the 1 s timeout, not the 300 s default
    assert not (root / "ran.txt").exists()


def test_the_timeout_must_be_positive() -> None:
    result = CliRunner().invoke(app, ["serve", "--approval-timeout", "0"])
    assert result.exit_code == 2
    assert "approval-timeout" in result.output
