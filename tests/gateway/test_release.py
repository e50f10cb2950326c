"""A session the gateway lets go is freed at once, not left for a full garbage collection.

Its agent and the live session refer to each other (the agent's approver asks the session): a
cycle like that outlives its turn until the cyclic GC walks the whole heap. The check runs
with the collector off, so only reference counting frees.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path

import pytest
from gateway_support import scripted_gateway

from xclaw.gateway.acp import AcpMessage, ServerFrame
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(30)


class _Channel:
    name = "web"

    def __init__(self) -> None:
        self.replies: asyncio.Queue[ServerFrame] = asyncio.Queue()

    def send(self, frame: ServerFrame) -> None:
        if frame.type in ("reply", "error"):
            self.replies.put_nowait(frame)


async def test_a_session_let_go_frees_its_agent_without_the_collector(root: Path) -> None:
    store = open_store()
    gateway = scripted_gateway(root, ["Hello."], store)
    channel = _Channel()
    live = gateway.open_session("web", "test")
    gateway.watch(live, channel)
    message = AcpMessage(sessionId=live.id, channel="web", caller="test", content="hi")
    gateway.submit(message, channel)
    reply = await asyncio.wait_for(channel.replies.get(), 20)
    assert reply.type == "reply" and reply.status == "completed"  # type: ignore[union-attr]
    if live.worker is not None:
        await live.worker  # the turn's worker has ended: the session is idle
    assert live.agent is not None
    agent = weakref.ref(live.agent)
    session = weakref.ref(live)
    del live, reply
    enabled = gc.isenabled()
    gc.disable()
    try:
        gateway.detach(channel)
        for _ in range(5):  # the model's close runs as its own task
            await asyncio.sleep(0)
        assert gateway.live_count == 0
        assert agent() is None, "the agent waits for the cyclic garbage collector"
        assert session() is None, "the live session waits for the cyclic garbage collector"
    finally:
        if enabled:
            gc.enable()
        await gateway.close()
        store.close()
