"""RedisFanout against a real throwaway Redis: the queue, the lease, take-over and fan-out."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis_support import RedisServer

from xclaw.gateway import lease
from xclaw.gateway.acp import AcpMessage, DeltaFrame, ServerFrame
from xclaw.gateway.fanout import LeaseLost, RedisFanout

pytestmark = pytest.mark.timeout(30)


class Recorder:
    """A FanoutHandler that writes down what it is asked."""

    def __init__(self) -> None:
        self.frames: list[tuple[str, ServerFrame]] = []
        self.commands: list[tuple[str, dict[str, Any]]] = []
        self.claims: list[str] = []
        self.lost_ones: list[str] = []
        self.changed = asyncio.Event()

    def deliver(self, session_id: str, frame: ServerFrame) -> None:
        self.frames.append((session_id, frame))
        self.changed.set()

    def command(self, session_id: str, command: dict[str, Any]) -> None:
        self.commands.append((session_id, command))
        self.changed.set()

    def claim(self, session_id: str) -> None:
        self.claims.append(session_id)
        self.changed.set()

    def lost(self, session_id: str) -> None:
        self.lost_ones.append(session_id)
        self.changed.set()


def message(text: str, sid: str = "s1") -> AcpMessage:
    return AcpMessage(session_id=sid, channel="web", content=text, caller="test")


async def until(check: Any, wait: float = 8.0) -> None:
    deadline = asyncio.get_running_loop().time() + wait
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition never held")
        await asyncio.sleep(0.05)


async def test_one_holder_runs_the_queue_in_order_and_lets_go(redis_server: RedisServer) -> None:
    a, b = RedisFanout(redis_server.url), RedisFanout(redis_server.url)
    await a.start(Recorder())
    await b.start(Recorder())
    try:
        assert await a.enqueue(message("one")) is True  # free: a holds it now
        assert await b.enqueue(message("two")) is False  # held: b only queued it
        first = await a.take("s1", lambda: (1, 2, 3))
        assert first is not None and first.message.content == "one" and not first.recovered
        with pytest.raises(LeaseLost):
            await b.take("s1", lambda: (0, 0, 0))  # never the non-holder
        assert await a.finish("s1") is True  # "two" waits: a keeps the lease
        second = await a.take("s1", lambda: (1, 2, 3), probe=False)
        assert second is not None and second.message.content == "two"
        assert await a.finish("s1") is False  # nothing waits: let go
        assert await a.redis.exists(lease.keys("s1")[0]) == 0
        assert await a.redis.smembers(lease.keys("s1")[3]) == set()
    finally:
        await a.close()
        await b.close()


async def test_a_message_queued_while_the_holder_lets_go_is_never_stranded(
    redis_server: RedisServer,
) -> None:
    a, b = RedisFanout(redis_server.url), RedisFanout(redis_server.url)
    await a.start(Recorder())
    await b.start(Recorder())
    try:
        assert await a.enqueue(message("one"))
        assert await a.take("s1", lambda: (0, 0, 0), probe=False) is not None
        assert await a.finish("s1") is False  # nothing waits: let go
        assert await a.enqueue(message("two"))  # free again: a holds it anew
        # a looks, finds nothing yet (another worker of a ran "two" meanwhile, say) ...
        await a.redis.delete(lease.keys("s1")[1])
        assert await a.take("s1", lambda: (0, 0, 0)) is None
        assert await b.enqueue(message("late")) is False  # ... b queues, a still holds ...
        assert await a.release("s1") is False  # ... so a keeps the lease and runs it
        late = await a.take("s1", lambda: (0, 0, 0))
        assert late is not None and late.message.content == "late" and not late.recovered
        assert await a.finish("s1") is False
        assert await a.redis.smembers(lease.keys("s1")[3]) == set()
    finally:
        await a.close()
        await b.close()


async def test_a_dead_holders_session_is_claimed_with_its_unfinished_message(
    redis_server: RedisServer,
) -> None:
    dead = RedisFanout(redis_server.url, lease_ttl=1.0)
    await dead.start(Recorder())
    dead._tasks[-1].cancel()  # its keeper: it renews nothing from now on, as if it had died
    survivor_handler = Recorder()
    survivor = RedisFanout(redis_server.url, lease_ttl=1.0)
    await survivor.start(survivor_handler)
    try:
        assert await dead.enqueue(message("mid-run"))
        taken = await dead.take("s1", lambda: (4, 5, 6))
        assert taken is not None
        assert await survivor.enqueue(message("after")) is False  # still held
        await until(lambda: survivor_handler.claims == ["s1"])  # expired, then claimed once
        again = await survivor.take("s1", lambda: (9, 9, 9))
        assert again is not None and again.recovered
        assert again.message.content == "mid-run" and again.counters == (4, 5, 6)
        assert await survivor.finish("s1") is True  # "after" waits
        nxt = await survivor.take("s1", lambda: (9, 9, 9), probe=False)
        assert nxt is not None and nxt.message.content == "after" and not nxt.recovered
        with pytest.raises(LeaseLost):
            await dead.take("s1", lambda: (0, 0, 0))  # the old holder can do nothing any more
    finally:
        await survivor.close()
        dead.leases.clear()
        await dead.close()


async def test_a_holder_whose_lease_was_taken_is_told_at_once(redis_server: RedisServer) -> None:
    handler = Recorder()
    a = RedisFanout(redis_server.url, lease_ttl=1.0)
    await a.start(handler)
    try:
        assert await a.enqueue(message("one"))
        await a.redis.set(lease.keys("s1")[0], "someone-else")
        await until(lambda: handler.lost_ones == ["s1"])
        assert "s1" not in a.leases
    finally:
        await a.close()


async def test_frames_reach_the_watchers_and_commands_reach_the_holder(
    redis_server: RedisServer,
) -> None:
    holder_handler, watcher_handler = Recorder(), Recorder()
    holder, watcher = RedisFanout(redis_server.url), RedisFanout(redis_server.url)
    await holder.start(holder_handler)
    await watcher.start(watcher_handler)
    try:
        assert await holder.enqueue(message("one"))
        watcher.watch("s1")
        holder.watch("s1")  # its own frames never come back to it
        await until(lambda: len(watcher.pubsub.channels) >= 2)
        await asyncio.sleep(0.1)
        for text in ("a", "b", "c"):
            holder.publish("s1", DeltaFrame(session_id="s1", text=text))
        await until(lambda: len(watcher_handler.frames) == 3)
        assert [f.text for _, f in watcher_handler.frames if isinstance(f, DeltaFrame)] == [
            "a",
            "b",
            "c",
        ]
        watcher.send_command("s1", {"type": "stop"})
        await until(lambda: holder_handler.commands == [("s1", {"type": "stop"})])
        await asyncio.sleep(0.2)
        assert holder_handler.frames == []
    finally:
        await holder.close()
        await watcher.close()


async def test_readiness_and_the_password_of_the_url(redis_server: RedisServer) -> None:
    from redis_support import _free_port

    from xclaw.redact import redact

    good = RedisFanout(redis_server.url)
    gone = RedisFanout(f"redis://:s3cret-redis-pass-9731@127.0.0.1:{_free_port()}/0")
    try:
        assert "s3cret-redis-pass-9731" not in redact("auth failed: s3cret-redis-pass-9731")
        assert await good.ready() is True
        assert await gone.ready() is False  # nobody listens there
    finally:
        await good.redis.aclose()
        await gone.redis.aclose()
