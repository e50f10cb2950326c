"""`xclaw serve` remembers: a fact saved with memory.save in one gateway process is in the
system prompt of a new session of the next process (real processes, real WebSocket, the
default local embedder and the SQLite memory store)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml
from websockets.sync.client import connect

from xclaw.dirs import config_dir
from xclaw.gateway.auth import gateway_token_path

pytestmark = pytest.mark.timeout(120)
FACT = "The user's favourite colour is teal."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _turn(root: Path, script: Path, message: str, *extra: str) -> dict[str, object]:
    """Start `xclaw serve`, send one message in a new session, return the final frame."""
    port = _free_port()
    argv = [sys.executable, "-m", "xclaw", "serve", "--port", str(port), "-C", str(root)]
    argv += ["-m", f"scripted:{script}", "--sandbox", "host", *extra]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ}
    )
    try:
        for _ in range(300):
            assert proc.poll() is None, "xclaw serve exited early"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").json() == {"ok": True}:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        token = gateway_token_path().read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        with connect(f"ws://127.0.0.1:{port}/ws", additional_headers=headers) as ws:
            ws.send(json.dumps({"type": "message", "content": message}))
            while True:
                frame: dict[str, object] = json.loads(ws.recv(timeout=60))
                if frame["type"] in ("reply", "error"):
                    return frame
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_a_fact_saved_in_one_session_is_recalled_in_the_next(root: Path, tmp_path: Path) -> None:
    user = config_dir() / "xclaw.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    # Extraction would ask the scripted model for facts: this test is about recall.
    user.write_text(yaml.safe_dump({"memory": {"extract": {"enabled": False}}}))
    save = tmp_path / "save.yaml"
    call = {"id": "c1", "name": "memory.save", "arguments": {"text": FACT}}
    save.write_text(
        yaml.safe_dump([{"tool_calls": [call]}, {"text": "Noted.", "expect": {"last_ok": True}}])
    )
    first = _turn(root, save, "Remember that my favourite colour is teal.")
    assert first["type"] == "reply" and "Noted." in str(first.get("text")), first

    recall = tmp_path / "recall.yaml"
    answer = {"text": "Teal.", "expect": {"system_contains": ["Relevant memories", FACT]}}
    recall.write_text(yaml.safe_dump([answer]))
    second = _turn(root, recall, "What is my favourite colour?")
    assert second["type"] == "reply" and "Teal." in str(second.get("text")), second
