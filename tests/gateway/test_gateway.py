"""The gateway end to end over a real WebSocket: turns, queueing, stop, approvals, restart."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from gateway_support import AUTH, client, exec_turn, send, serving, until

from xclaw import Agent, ScriptedModel
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(30)

MARK = "gateway-ran-42"
EXEC = exec_turn(MARK)


async def test_a_turn_streams_deltas_and_replies(root: Path) -> None:
    with serving(root, ["Hello from the gateway."]) as server:
        ws, sid = await client(server)
        await send(ws, type="message", id="m1", content="hi", sessionId=None)
        frames = await until(ws, "reply")
        await ws.close()
    deltas = "".join(f["text"] for f in frames if f["type"] == "delta")
    assert deltas == "Hello from the gateway."
    assert frames[-1] == {
        "type": "reply",
        "sessionId": sid,
        "text": "Hello from the gateway.",
        "status": "completed",
    }
    assert all(f["sessionId"] == sid for f in frames)
    record = open_store().get_session(sid)
    assert record is not None and record.root == str(root)


async def test_second_message_queues_and_continues_the_session(root: Path) -> None:
    with serving(root, ["first answer", "second answer"]) as server:
        ws, sid = await client(server)
        await send(ws, type="message", content="one")
        await send(ws, type="message", content="two")
        first = await until(ws, "reply")
        second = await until(ws, "reply")
        await send(ws, type="history", sessionId=sid)
        history = (await until(ws, "history"))[-1]
        await ws.close()
    assert first[-1]["text"] == "first answer"
    assert second[-1]["text"] == "second answer"
    texts = [(m["role"], m["text"]) for m in history["messages"]]
    assert texts[-4:] == [
        ("user", "one"),  # what was typed, not the agent's task wrapper
        ("assistant", "first answer"),
        ("user", "two"),
        ("assistant", "second answer"),
    ]


async def test_approve_runs_the_command(root: Path) -> None:
    with serving(root, [EXEC, "done"]) as server:
        ws, sid = await client(server)
        await send(ws, type="message", content="run it")
        frames = await until(ws, "approval.request")
        request = frames[-1]
        assert request["sessionId"] == sid and request["risk"]
        await send(ws, type="approval.response", requestId=request["requestId"], answer="once")
        frames = await until(ws, "reply")
        await ws.close()
    kinds = [f["event"]["type"] for f in frames if f["type"] == "event"]
    assert "tool.started" in kinds and "tool.completed" in kinds
    assert (root / "out.txt").read_text().strip() == MARK
    assert frames[-1]["status"] == "completed"


async def test_deny_refuses_the_command(root: Path) -> None:
    with serving(root, [EXEC, "ok, not run"]) as server:
        ws, _ = await client(server)
        await send(ws, type="message", content="run it")
        request = (await until(ws, "approval.request"))[-1]
        await send(ws, type="approval.response", requestId=request["requestId"], answer="deny")
        frames = await until(ws, "reply")
        await ws.close()
    done = [
        f["event"]
        for f in frames
        if f["type"] == "event" and f["event"]["type"] == "tool.completed"
    ]
    assert done and "APPROVAL_DENIED" in str(done[-1]["payload"])
    assert not (root / "out.txt").exists()


async def test_stop_cancels_the_running_turn_and_the_queue_goes_on(root: Path) -> None:
    with serving(root, [EXEC, "after stop"]) as server:
        ws, sid = await client(server)
        await send(ws, type="message", content="run it")
        await until(ws, "approval.request")  # the turn is running, waiting on us
        await send(ws, type="message", content="next")  # queued behind it
        await send(ws, type="stop", sessionId=sid)
        stopped = (await until(ws, "reply"))[-1]
        nxt = (await until(ws, "reply"))[-1]
        await ws.close()
    assert stopped["status"] == "interrupted"
    assert nxt["text"] == "after stop"


async def test_restart_finds_the_session(root: Path) -> None:
    with serving(root, ["before restart", "after restart"]) as server:
        ws, sid = await client(server)
        await send(ws, type="message", content="remember me")
        await until(ws, "reply")
        await ws.close()
    with serving(root, ["before restart", "after restart"]) as server:
        ws, again = await client(server, f"?session={sid}")
        assert again == sid
        await send(ws, type="message", content="still there?")
        reply = (await until(ws, "reply"))[-1]
        await ws.close()
    assert reply["text"] == "after restart"
    assert reply["sessionId"] == sid


async def test_unknown_session_is_an_error(root: Path) -> None:
    with serving(root, ["x"]) as server:
        ws, _ = await client(server)
        await send(ws, type="message", content="hi", sessionId="no-such-session")
        frame = (await until(ws, "error"))[-1]
        await send(ws, type="nonsense")
        bad = (await until(ws, "error"))[-1]
        await ws.close()
    assert frame["code"] == "SESSION_NOT_FOUND"
    assert bad["code"] == "FRAME_INVALID"
    await asyncio.sleep(0)


async def test_a_stopped_gateway_session_resumes_from_the_cli(root: Path) -> None:
    with serving(root, [EXEC, "unused"]) as server:
        ws, sid = await client(server)
        await send(ws, type="message", content="run it")
        await until(ws, "approval.request")
        await send(ws, type="stop", sessionId=sid)
        assert (await until(ws, "reply"))[-1]["status"] == "interrupted"
        await ws.close()
    store = open_store()
    record = store.get_session(sid)
    assert record is not None and record.state != "success"
    agent = Agent(ScriptedModel([EXEC, "resumed"]), root, store=store, approval="deny")
    result = await agent.resume(sid, interrupted="skip")  # what `xclaw resume ID` runs
    assert result.session_id == sid and result.status == "completed", result.reason
    store.close()


async def test_a_client_that_leaves_frees_its_live_session(root: Path) -> None:
    with serving(root, ["hello"]) as server:
        for _ in range(5):
            ws, _sid = await client(server)
            await ws.close()
        ws, _sid = await client(server)
        await send(ws, type="message", content="hi")
        await until(ws, "reply")
        await ws.close()
        await asyncio.sleep(0.3)
        live = server.app.state.gateway._live  # the running part only; the store keeps all
    assert live == {}


async def test_stop_mid_command_then_the_session_goes_on(root: Path) -> None:
    sleep = {
        "text": "sleeping",
        "tool_calls": [
            {"id": "c1", "name": "terminal.exec", "arguments": {"program": "sleep", "argv": ["20"]}}
        ],
    }
    with serving(root, [sleep, "after the stop"]) as server:
        ws, sid = await client(server)
        await send(ws, type="message", content="sleep")
        request = (await until(ws, "approval.request"))[-1]
        await send(ws, type="approval.response", requestId=request["requestId"], answer="once")
        frames = await until(ws, "event")
        while frames[-1]["event"]["type"] != "tool.started":
            frames = await until(ws, "event")
        await send(ws, type="stop", sessionId=sid)
        assert (await until(ws, "reply", 10))[-1]["status"] == "interrupted"
        await send(ws, type="message", content="go on")
        frames = await until(ws, "reply", 10)
        await ws.close()
    skipped = [f for f in frames if f["type"] == "event" and f["event"]["type"] == "tool.completed"]
    assert skipped and skipped[0]["event"]["payload"]["error_code"] == "INTERRUPTED_CALL_SKIPPED"
    assert frames[-1]["text"] == "after the stop"


async def test_session_api_lists_searches_and_details(root: Path) -> None:
    with serving(root, [EXEC, "all done"]) as server:
        ws, sid = await client(server)
        await send(ws, type="message", content="run the zebra check")
        request = (await until(ws, "approval.request"))[-1]
        await send(ws, type="approval.response", requestId=request["requestId"], answer="once")
        await until(ws, "reply")
        await ws.close()
        async with httpx.AsyncClient(base_url=server.url, headers=AUTH) as http:
            listed = (await http.get("/api/sessions")).json()
            found = (await http.get("/api/sessions", params={"q": "zebra"})).json()
            missed = (await http.get("/api/sessions", params={"q": "giraffe"})).json()
            detail = (await http.get(f"/api/sessions/{sid}")).json()
            missing = await http.get("/api/sessions/no-such-session")
    assert [s["id"] for s in listed] == [sid] and listed[0]["state"] == "success"
    assert set(listed[0]) == {"id", "title", "updatedAt", "state"}
    assert [s["id"] for s in found] == [sid] and missed == []
    assert detail["id"] == sid
    assert detail["messages"][-1] == {"role": "assistant", "text": "all done"}
    assert any(s["name"] == "terminal.exec" for s in detail["steps"])
    assert missing.status_code == 404
