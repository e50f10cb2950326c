"""Two real gateway processes (`xclaw serve`, scripted model) on one PostgreSQL and one Redis
serve the same session: a client on either sees every turn, an approval asked on one is
answered on the other, and killing the instance that runs a turn (SIGKILL) loses no step: the
other takes the session over when the lease lapses and finishes the turn for the client that
reconnected to it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis_support import RedisServer
from serve_support import (
    Frame,
    client,
    deltas,
    exec_turn,
    is_type,
    start,
    token,
    wait_ready,
    write_script,
)

from xclaw.gateway import lease
from xclaw.store.postgres import PostgresStore

pytestmark = pytest.mark.timeout(90)

SCRIPT: list[Frame | str] = [
    "Hello from the first turn.",
    exec_turn("mark"),
    "It ran.",  # after a take-over the resume reminder comes last, not the tool result
    "Third turn.",
    exec_turn("again"),
    "It ran again.",
]


async def test_two_instances_share_sessions_and_survive_a_kill(
    root: Path, tmp_path: Path, pg_url: str, redis_server: RedisServer
) -> None:
    script = write_script(tmp_path / "script.jsonl", SCRIPT)
    env = {"XCLAW_DATABASE_URL": pg_url, "XCLAW_REDIS_URL": redis_server.url}
    token()  # one token for both, made before they start
    extra = ("--lease-ttl", "2")
    a = await start(root, script, tmp_path / "a.log", env=env, extra=extra)
    b = await start(root, script, tmp_path / "b.log", env=env, extra=extra)
    try:
        await wait_ready(a, b)
        on_a = await client(a)
        await on_a.send({"type": "message", "content": "hello"})
        first = await on_a.until(is_type("reply"))
        assert deltas(first) == "Hello from the first turn."
        on_b = await client(b, on_a.session)  # the same session, through the other instance

        # a turn running on a: b's client sees its deltas and answers its approval
        await on_a.send({"type": "message", "content": "run it"})
        asked = await on_b.until(is_type("approval.request"))
        assert deltas(asked) == "Running it."
        request = asked[-1]["requestId"]
        await on_b.send({"type": "approval.response", "requestId": request, "answer": "once"})
        seen_b = await on_b.until(is_type("reply"))
        seen_a = await on_a.until(is_type("reply"))
        assert seen_b[-1]["text"] == seen_a[-1]["text"] == "It ran."
        assert any(f["type"] == "event" and f["event"]["type"] == "tool.completed" for f in seen_b)
        assert (root / "out.txt").read_text() == "mark\n"

        # the other way round: sent to b, seen on a
        await on_b.send({"type": "message", "content": "once more"})
        third = await on_a.until(is_type("reply"))
        assert deltas(third) == "Third turn." and third[-1]["text"] == "Third turn."
        assert (await on_b.until(is_type("reply")))[-1]["text"] == "Third turn."

        # a runs a turn and dies in it (SIGKILL: no goodbye) while it waits for an approval;
        # first b lets the session go (after its reply it still finishes its bookkeeping, and
        # a message sent meanwhile is run by b, the holder)
        redis = Redis.from_url(redis_server.url)
        for _ in range(100):
            if not await redis.exists(lease.keys(on_a.session)[0]):
                break
            await asyncio.sleep(0.05)
        await redis.aclose()
        await on_a.send({"type": "message", "content": "run it again"})
        await on_a.until(is_type("approval.request"))
        await on_b.until(is_type("approval.request"))
        store = PostgresStore(pg_url)
        before = [(s.step_id, s.kind, s.status) for s in store.list_steps(on_a.session)]
        a.kill()
        await a.proc.wait()
        back = await client(b, on_a.session)  # the user reconnects to the survivor
        asked = await back.until(is_type("approval.request"), wait=30)  # b took the turn over
        answer = {"type": "approval.response", "requestId": asked[-1]["requestId"]}
        await back.send({**answer, "answer": "once"})
        reply = await back.until(is_type("reply"))
        assert reply[-1]["text"] == "It ran again." and reply[-1]["status"] == "completed"
        assert (await on_b.until(is_type("reply")))[-1]["text"] == "It ran again."
        assert (root / "out.txt").read_text() == "mark\nagain\n"  # each command ran once

        after = [(s.step_id, s.kind, s.status) for s in store.list_steps(on_a.session)]
        assert after[: len(before) - 1] == before[: len(before) - 1]  # no step lost
        numbers = [int(step_id[1:]) for step_id, _, _ in after]
        assert numbers == list(range(1, len(numbers) + 1))
        tools = [s for s in store.list_steps(on_a.session) if s.kind == "tool_call"]
        assert [t.status for t in tools] == ["completed", "completed"]  # two calls, once each
        record = store.get_session(on_a.session)
        assert record is not None and record.state != "running"
        store.close()
        for ws in (on_a.ws, on_b.ws, back.ws):
            await ws.close()
    finally:
        await a.stop()
        await b.stop()
