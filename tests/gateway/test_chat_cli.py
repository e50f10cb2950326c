"""`xclaw chat` (a terminal WebSocket client) and `xclaw serve`, as real processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from gateway_support import TOKEN, serving
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.gateway.auth import gateway_token_path

pytestmark = pytest.mark.timeout(40)

MARK = "chat-cli-ran-7"
EXEC = {
    "text": "Running it.",
    "tool_calls": [
        {
            "id": "call_1",
            "name": "terminal.exec",
            "arguments": {"program": "sh", "argv": ["-c", f"echo {MARK}"]},
        }
    ],
}
XCLAW = [sys.executable, "-m", "xclaw"]


def _chat(url: str, stdin: str, *extra: str, token: str | None = TOKEN) -> str:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("XCLAW_GATEWAY_TOKEN", None)
    if token:
        env["XCLAW_GATEWAY_TOKEN"] = token
    done = subprocess.run(
        [*XCLAW, "chat", "--url", url, *extra],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_chat_prints_deltas_and_asks_the_approval_here(root: Path) -> None:
    with serving(root, [EXEC, f"It printed {MARK}."]) as server:
        out = _chat(server.ws_url, "run the check\no\n")
    assert "session cli-" in out
    assert "approve?" in out and "terminal.exec" in out
    assert f"It printed {MARK}." in out and "[completed]" in out
    assert out.count(MARK) >= 3  # the arguments, the output, the answer


def test_chat_deny_and_continue_the_session(root: Path) -> None:
    with serving(root, [EXEC, "Not run.", "second turn"]) as server:
        first = _chat(server.ws_url, "run it\nno\n")
        sid = first.split("session ", 1)[1].split()[0]
        second = _chat(server.ws_url, "again\n", "--session", sid)
    assert "APPROVAL_DENIED" in first and "Not run." in first
    assert f"session {sid}" in second and "second turn" in second


def test_serve_refuses_a_public_bind_without_a_token() -> None:
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "-m", "scripted:x.yaml"])
    assert result.exit_code != 0
    assert "GATEWAY_REMOTE_NEEDS_TOKEN" in result.output or "loopback" in result.output
    assert not gateway_token_path().exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_then_chat(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"text": "served by xclaw serve"}) + "\n")
    port = _free_port()
    proc = subprocess.Popen(
        [*XCLAW, "serve", "--port", str(port), "-C", str(root), "-m", f"scripted:{script}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(150):
            try:
                if httpx.get(f"{base}/healthz").json() == {"ok": True}:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        token = gateway_token_path().read_text().strip()
        out = _chat(f"ws://127.0.0.1:{port}/ws", "hello\n", token=None)  # reads the token file
        listed = httpx.get(f"{base}/api/sessions", headers={"Authorization": f"Bearer {token}"})
    finally:
        proc.terminate()
        stdout, stderr = proc.communicate(timeout=15)
    assert "served by xclaw serve" in out
    assert stdout.count(token) == 1  # printed once, on the start that made it
    assert token not in stderr  # the logs never
    assert [s["state"] for s in listed.json()] == ["success"]


def test_ctrl_c_stops_the_turn_and_the_chat_goes_on(root: Path) -> None:
    slow = {
        "text": "Waiting.",
        "tool_calls": [
            {
                "id": "c1",
                "name": "terminal.exec",
                "arguments": {"program": "sh", "argv": ["-c", "touch started; sleep 20"]},
            }
        ],
    }
    with serving(root, [slow, "after the stop"]) as server:
        env = {**os.environ, "NO_COLOR": "1", "XCLAW_GATEWAY_TOKEN": TOKEN}
        proc = subprocess.Popen(
            [*XCLAW, "chat", "--url", server.ws_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdin is not None
        proc.stdin.write("wait\no\nnext\n")
        proc.stdin.flush()
        for _ in range(200):
            if (root / "started").exists():
                break
            time.sleep(0.05)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, out + err
    assert "[stopping]" in out and "[interrupted]" in out
    assert "after the stop" in out
