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
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gateway_support import AUTH, serving
from serve_process import Frame, connect_to, frames_until, nothing_of, serve, stop
from websockets.asyncio.client import connect

from xclaw.gateway.server import GatewayServer
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(120)

MARK = "approved-once-41"


def _serve(root: Path, script: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    return serve(root, log, "-m", f"scripted:{script}", "--sandbox", "host")


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
        ws, sid = await connect_to(port)
        await ws.send(json.dumps({"type": "message", "content": "append the mark"}))
        frames = await frames_until(ws, "approval.request")
        assert "sh" in frames[-1]["summary"]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=15)
        await ws.close()
        return sid

    proc, port = _serve(root, script, log)
    try:
        sid = asyncio.run(killed_while_asking(proc, port))
    finally:
        stop(proc)
    with open_store() as store:
        record = store.get_session(sid)
        assert record is not None
        assert (record.state, record.phase) == ("running", "APPROVAL_REQUIRED")
    assert not (root / "out.txt").exists()

    async def after_the_restart(port: int) -> list[Frame]:
        ws, again = await connect_to(port, sid)
        assert again == sid
        asked = await frames_until(ws, "approval.request")  # nothing was sent: offered on connect
        request = asked[-1]
        await ws.send(
            json.dumps(
                {"type": "approval.response", "requestId": request["requestId"], "answer": "once"}
            )
        )
        done = await frames_until(ws, "reply")
        await ws.close()
        later, _ = await connect_to(port, sid)  # the answer was given: nothing is asked again
        await nothing_of(later, "approval.request")
        await later.close()
        return asked + done

    proc, port = _serve(root, script, log)
    try:
        frames = asyncio.run(after_the_restart(port))
    finally:
        stop(proc)
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
                started = sessions and any(
                    e.phase == "started" for e in store.load_ledger(sessions[0].id)
                )
                # mid-command: on record as started, and its echo done (the record is made
                # before the command is launched; a kill in between would find no mark)
                if started and (root / "out.txt").exists():
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("the command never started")
        sid = sessions[0].id
        run.send_signal(signal.SIGKILL)  # the host-mode sleep outlives it, 8 s at most
    finally:
        stop(run)
    paused = subprocess.run(
        [*xclaw, "resume", sid], stdin=subprocess.DEVNULL, capture_output=True, timeout=120
    )
    assert paused.returncode == 3, paused.stdout + paused.stderr
    with open_store() as store:
        record = store.get_session(sid)
        assert record is not None and record.state == "paused" and record.pending

    async def open_it(server: GatewayServer) -> list[Frame]:
        ws = await connect(server.ws_url + f"?session={sid}", additional_headers=AUTH)
        asked = await frames_until(ws, "approval.request")
        request = asked[-1]
        assert "terminal.exec" in request["summary"]
        answer = {"type": "approval.response", "requestId": request["requestId"], "answer": "deny"}
        await ws.send(json.dumps(answer))
        done = await frames_until(ws, "reply")
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
