"""Seed 003's multi-session check: concurrent clients see only their own session."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from gateway_support import client, send, serving, until

pytestmark = pytest.mark.timeout(30)


async def _chat(server: object, word: str) -> tuple[str, list[dict[str, object]]]:
    ws, sid = await client(server)  # type: ignore[arg-type]
    await send(ws, type="message", content=f"secret word {word}")
    frames = await until(ws, "reply")
    await ws.close()
    return sid, frames


async def test_two_clients_each_see_only_their_own(root: Path) -> None:
    turns = ["alpha answer " * 5, "bravo answer " * 5]
    with serving(root, lambda: [turns.pop(0)]) as server:
        (sid_a, a), (sid_b, b) = await asyncio.gather(_chat(server, "A"), _chat(server, "B"))
    assert sid_a != sid_b
    assert all(f["sessionId"] == sid_a for f in a)
    assert all(f["sessionId"] == sid_b for f in b)
    text_a = "".join(str(f["text"]) for f in a if f["type"] == "delta")
    text_b = "".join(str(f["text"]) for f in b if f["type"] == "delta")
    assert {text_a.split()[0], text_b.split()[0]} == {"alpha", "bravo"}
    assert text_a.split()[0] not in text_b and text_b.split()[0] not in text_a


async def test_cli_history_is_absent_from_the_web_session(root: Path) -> None:
    with serving(root, ["a reply"]) as server:
        cli, cli_sid = await client(server, "?channel=cli")
        assert cli_sid.startswith("cli-")
        await send(cli, type="message", content="cli-only secret")
        await until(cli, "reply")
        web, web_sid = await client(server)
        await send(web, type="message", content="web question")
        await until(web, "reply")
        await send(web, type="history", sessionId=web_sid)
        history = (await until(web, "history"))[-1]
        await cli.close()
        await web.close()
    assert web_sid != cli_sid
    assert "cli-only secret" not in json.dumps(history)
    assert any("web question" in m["text"] for m in history["messages"])


async def test_an_approval_is_answered_only_from_its_own_session(root: Path) -> None:
    run = {
        "text": "Running.",
        "tool_calls": [
            {
                "id": "c1",
                "name": "terminal.exec",
                "arguments": {"program": "sh", "argv": ["-c", "echo hi > hi.txt"]},
            }
        ],
    }
    with serving(root, [run, "done"]) as server:
        owner, _ = await client(server)
        other, _ = await client(server)
        await send(owner, type="message", content="run")
        request = (await until(owner, "approval.request"))[-1]
        await send(other, type="approval.response", requestId=request["requestId"], answer="once")
        refused = (await until(other, "error"))[-1]
        assert not (root / "hi.txt").exists()
        await send(owner, type="approval.response", requestId=request["requestId"], answer="once")
        reply = (await until(owner, "reply"))[-1]
        await owner.close()
        await other.close()
    assert refused["code"] == "APPROVAL_UNKNOWN"
    assert reply["status"] == "completed" and (root / "hi.txt").exists()
