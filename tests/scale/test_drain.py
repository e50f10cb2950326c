"""SIGTERM on a real `xclaw serve` mid-turn: readiness turns false, new connections are
refused, the running turn may finish within the drain timeout (or is interrupted, recorded
and resumable), the session's lease is let go, and the process exits cleanly."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis
from redis_support import RedisServer
from serve_support import (
    Instance,
    client,
    exec_turn,
    is_type,
    start,
    token,
    wait_ready,
    write_script,
)
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from xclaw.gateway import lease
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(60)


async def serving(root: Path, tmp_path: Path, redis: RedisServer, drain_timeout: str) -> Instance:
    script = write_script(tmp_path / "script.jsonl", [exec_turn("mark"), "It ran."])
    token()
    extra = ("--drain-timeout", drain_timeout, "--lease-ttl", "2")
    inst = await start(
        root, script, tmp_path / "serve.log", env={"XCLAW_REDIS_URL": redis.url}, extra=extra
    )
    await wait_ready(inst)
    return inst


async def test_sigterm_lets_the_running_turn_finish_then_exits(
    root: Path, tmp_path: Path, redis_server: RedisServer
) -> None:
    inst = await serving(root, tmp_path, redis_server, "30")
    try:
        user = await client(inst)
        await user.send({"type": "message", "content": "run it"})
        asked = await user.until(is_type("approval.request"))
        inst.term()  # mid-turn: the turn waits for its approval
        async with httpx.AsyncClient() as http:
            for _ in range(100):
                ready = await http.get(f"{inst.base}/readyz")
                if ready.status_code == 503:
                    break
                await asyncio.sleep(0.05)
            assert ready.status_code == 503 and ready.json() == {"ready": False}
            assert (await http.get(f"{inst.base}/healthz")).json() == {"ok": True}
        auth = {"Authorization": f"Bearer {token()}"}
        async with connect(inst.ws, additional_headers=auth) as late:
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(late.recv(), 5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013  # try later
        await user.send({"type": "message", "content": "another"})
        refused = await user.until(is_type("error"))
        assert refused[-1]["code"] == "GATEWAY_DRAINING"

        request = asked[-1]["requestId"]
        await user.send({"type": "approval.response", "requestId": request, "answer": "once"})
        reply = await user.until(is_type("reply"))
        assert reply[-1]["text"] == "It ran." and reply[-1]["status"] == "completed"
        assert await asyncio.wait_for(inst.proc.wait(), 20) == 0
        assert (root / "out.txt").read_text() == "mark\n"
        redis = Redis.from_url(redis_server.url)
        assert await redis.exists(lease.keys(user.session)[0]) == 0  # let go
        await redis.aclose()
        assert "gateway stopped" in inst.log.read_text()
    finally:
        await inst.stop()


async def test_a_turn_past_the_drain_timeout_is_interrupted_and_resumable(
    root: Path, tmp_path: Path, redis_server: RedisServer
) -> None:
    inst = await serving(root, tmp_path, redis_server, "1")
    try:
        user = await client(inst)
        await user.send({"type": "message", "content": "run it"})
        await user.until(is_type("approval.request"))
        inst.term()  # nobody answers: after 1 s the turn is stopped
        ended = await user.until(lambda f: f["type"] in ("reply", "error"), wait=20)
        assert ended[-1]["type"] == "reply" and ended[-1]["status"] == "interrupted", ended
        assert await asyncio.wait_for(inst.proc.wait(), 20) == 0
        assert not (root / "out.txt").exists()  # the unapproved command never ran
        redis = Redis.from_url(redis_server.url)
        assert await redis.exists(lease.keys(user.session)[0]) == 0
        await redis.aclose()
        store = open_store()
        record = store.get_session(user.session)
        assert record is not None and record.state != "running"  # recorded as it ended
        steps = store.list_steps(user.session)
        assert steps and all(s.status != "running" for s in steps)
        store.close()
    finally:
        await inst.stop()
    # the next instance continues the session where the drained one stopped it
    again = await serving(root, tmp_path, redis_server, "1")
    try:
        back = await client(again, user.session)
        await back.send({"type": "message", "content": "go on"})
        reply = await back.until(is_type("reply"))
        assert reply[-1]["text"] == "It ran." and reply[-1]["status"] == "completed"
        assert not (root / "out.txt").exists()  # the interrupted call is not run again
        await back.ws.close()
    finally:
        await again.stop()
