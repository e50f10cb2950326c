"""An approval that was waiting survives a SIGKILL of a real ``xclaw serve`` (seed 003 ch. 06).

A web session's turn asks to run a command and waits for the answer; the gateway process is
killed. After a restart, a client that reconnects to the session gets the approval prompt
again without sending anything; answering it runs the command once and finishes the turn
once, and a later connection is asked nothing more. A session paused on a call cut off by a
crash is asked the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_support import AUTH, serving
from websockets.asyncio.client import ClientConnection, connect

from xclaw.gateway.auth import gateway_token_path
from xclaw.gateway.server import GatewayServer
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(120)

Frame = dict[str, Any]
MARK = "approved-once-41"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(root: Path, script: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    argv = [sys.executable, "-m", "xclaw", "serve", "--port", str(port), "-C", str(root)]
    argv += ["-m", f"scripted:{script}", "--sandbox", "host", "--no-memory"]
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


async def _connect(port: int, session: str | None = None) -> tuple[ClientConnection, str]:
    token = gateway_token_path().read_text().strip()
    query = f"?session={session}" if session else ""
    ws = await connect(
        f"ws://127.0.0.1:{port}/ws{query}", additional_headers={"Authorization": f"Bearer {token}"}
    )
    first = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert first["type"] == "session", first
    return ws, str(first["sessionId"])


async def _until(ws: ClientConnection, kind: str, wait: float = 20.0) -> list[Frame]:
    frames: list[Frame] = []
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), wait))
        frames.append(frame)
        if frame["type"] == kind:
            return frames


async def _nothing_of(ws: ClientConnection, kind: str, wait: float = 1.5) -> None:
    try:
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), wait))
            assert frame["type"] != kind, frame
    except TimeoutError:
        return


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=15)


def test_a_waiting_approval_is_offered_again_after_a_gateway_sigkill(
    root: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.jsonl"
    call = {
        "id": "call_1",
        "name": "terminal.exec",
        "arguments": {"program": "sh", "argv": ["-c", f"echo {MARK} >> out.txt"]},
    }
    turns: list[Frame | str] = [
        {"text": "Running it.", "tool_calls": [call]},
        "It ran.",
    ]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    log = tmp_path / "serve.log"

    async def killed_while_asking(proc: subprocess.Popen[bytes], port: int) -> str:
        ws, sid = await _connect(port)
        await ws.send(json.dumps({"type": "message", "content": "append the mark"}))
        frames = await _until(ws, "approval.request")
        assert "sh" in frames[-1]["summary"]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=15)
        await ws.close()
        return sid

    proc, port = _serve(root, script, log)
    try:
        sid = asyncio.run(killed_while_asking(proc, port))
    finally:
        _stop(proc)
    with open_store() as store:
        record = store.get_session(sid)
        assert record is not None
        assert (record.state, record.phase) == ("running", "APPROVAL_REQUIRED")
    assert not (root / "out.txt").exists()

    async def after_the_restart(port: int) -> list[Frame]:
        ws, again = await _connect(port, sid)
        assert again == sid
        asked = await _until(ws, "approval.request")  # nothing was sent: offered on connect
        request = asked[-1]
        await ws.send(
            json.dumps(
                {"type": "approval.response", "requestId": request["requestId"], "answer": "once"}
            )
        )
        done = await _until(ws, "reply")
        await ws.close()
        later, _ = await _connect(port, sid)  # the answer was given: nothing is asked again
        await _nothing_of(later, "approval.request")
        await later.close()
        return asked + done

    proc, port = _serve(root, script, log)
    try:
        frames = asyncio.run(after_the_restart(port))
    finally:
        _stop(proc)
    replies = [f for f in frames if f["type"] == "reply"]
    assert [(r["text"], r["status"]) for r in replies] == [("It ran.", "completed")]
    assert len([f for f in frames if f["type"] == "approval.request"]) == 1
    assert (root / "out.txt").read_text() == f"{MARK}\n"  # ran once
    with open_store() as store:
        record = store.get_session(sid)
        assert record is not None and record.state == "success"
        (entry,) = store.load_ledger(sid)
        assert entry.phase in ("completed", "result_sent") and entry.result is not None
        assert entry.result["ok"]


def test_a_paused_decision_is_asked_on_connect_and_deny_skips_the_call(
    root: Path, tmp_path: Path
) -> None:
    """A run killed mid-command, resumed without a terminal, pauses (SESSION_PAUSED); the
    gateway asks that decision of the first client that opens the session."""
    call = {
        "id": "call_1",
        "name": "terminal.exec",
        "arguments": {"program": "sh", "argv": ["-c", f"echo {MARK} >> out.txt; sleep 8"]},
    }
    turns: list[Frame | str] = [{"text": "Running it.", "tool_calls": [call]}, "Skipped it."]
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    xclaw = [sys.executable, "-m", "xclaw"]
    run = subprocess.Popen(
        [*xclaw, "run", "-C", str(root), "-m", f"scripted:{script}", "--sandbox", "host"]
        + ["--approval", "allow", "append the mark"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with open_store() as store:
            for _ in range(600):
                sessions = store.list_sessions(root=str(root))
                if sessions and any(
                    e.phase == "started" for e in store.load_ledger(sessions[0].id)
                ):
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("the command never started")
        sid = sessions[0].id
        run.send_signal(signal.SIGKILL)  # the host-mode sleep outlives it, 8 s at most
    finally:
        _stop(run)
    paused = subprocess.run(
        [*xclaw, "resume", sid], stdin=subprocess.DEVNULL, capture_output=True, timeout=120
    )
    assert paused.returncode == 3, paused.stdout + paused.stderr
    with open_store() as store:
        record = store.get_session(sid)
        assert record is not None and record.state == "paused" and record.pending

    async def open_it(server: GatewayServer) -> list[Frame]:
        ws = await connect(server.ws_url + f"?session={sid}", additional_headers=AUTH)
        asked = await _until(ws, "approval.request")
        request = asked[-1]
        assert "terminal.exec" in request["summary"]
        answer = {"type": "approval.response", "requestId": request["requestId"], "answer": "deny"}
        await ws.send(json.dumps(answer))
        done = await _until(ws, "reply")
        await ws.close()
        return done

    with serving(root, turns) as server:
        frames = asyncio.run(open_it(server))
    assert (frames[-1]["text"], frames[-1]["status"]) == ("Skipped it.", "completed")
    assert (root / "out.txt").read_text() == f"{MARK}\n"  # not run again
    with open_store() as store:
        (entry,) = store.load_ledger(sid)
        assert entry.result is not None
        assert entry.result["error_code"] == "INTERRUPTED_CALL_SKIPPED"
