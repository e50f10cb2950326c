"""Graceful shutdown: SIGTERM (or Ctrl+C) drains the gateway before uvicorn stops.

uvicorn alone would close every WebSocket at once, cutting running turns off from their
clients. Here the first signal starts :meth:`Gateway.drain` (``/readyz`` turns false, new
connections and messages are refused, running turns get ``grace`` seconds, then are
interrupted through their run control and recorded as resumable, leases are let go) and only
then tells uvicorn to exit. A second signal exits at once.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

if TYPE_CHECKING:
    from xclaw.gateway.gateway import Gateway

__all__ = ["DrainingServer"]

log = logging.getLogger(__name__)


class DrainingServer(uvicorn.Server):
    """A uvicorn server whose exit signal drains ``gateway`` first."""

    def __init__(self, config: uvicorn.Config, gateway: Gateway, grace: float = 30.0) -> None:
        super().__init__(config)
        self.gateway = gateway
        self.grace = grace
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drain: asyncio.Task[None] | None = None
        self._signalled = False

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        loop = self._loop
        if self._signalled or loop is None or loop.is_closed():
            self.force_exit = self.should_exit  # a second signal during shutdown: now
            super().handle_exit(sig, frame)
            return
        self._signalled = True
        log.info("signal %d: draining the gateway (up to %.0fs)", sig, self.grace)
        # a signal handler runs between two bytecodes of the loop's thread: schedule only
        loop.call_soon_threadsafe(self._start_drain, sig)

    def _start_drain(self, sig: int) -> None:
        async def drain_then_exit() -> None:
            try:
                await self.gateway.drain(self.grace)
            except Exception:  # noqa: BLE001 - shutting down anyway; say why it was abrupt
                log.exception("draining the gateway failed")
            finally:
                uvicorn.Server.handle_exit(self, sig, None)

        self._drain = asyncio.get_running_loop().create_task(drain_then_exit())
