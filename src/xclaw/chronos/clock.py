"""Time for the scheduler: the wall clock, or a manual one tests move by hand."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]

_MAX_NAP_S = 30.0  # re-read the wall clock at least this often (NTP steps, suspend)


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware (UTC)."""

    async def sleep_until(self, when: datetime) -> None:
        """Return at ``when`` or later (immediately when it has passed)."""


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep_until(self, when: datetime) -> None:
        while True:
            delay = (when - self.now()).total_seconds()
            if delay <= 0:
                return
            await asyncio.sleep(min(delay, _MAX_NAP_S))


class ManualClock:
    """A clock that only moves when told: ``await clock.advance_to(t)`` wakes every sleeper
    due by ``t`` in time order, letting the woken tasks run at each instant."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start")
        self._now = start.astimezone(UTC)
        self._sleepers: list[tuple[datetime, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> datetime:
        return self._now

    async def sleep_until(self, when: datetime) -> None:
        if when <= self._now:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (when, next(self._seq), future))
        await future

    async def advance_to(self, target: datetime) -> None:
        await self.settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            when = self._sleepers[0][0]
            self._now = max(self._now, when)
            while self._sleepers and self._sleepers[0][0] <= when:
                _, _, future = heapq.heappop(self._sleepers)
                if not future.done():
                    future.set_result(None)
            await self.settle()
        self._now = max(self._now, target)
        await self.settle()

    async def jump_to(self, target: datetime) -> None:
        """Time passes with nobody awake (a suspended machine); then every sleeper due by
        ``target`` wakes at once, late."""
        self._now = max(self._now, target)
        await self.advance_to(target)

    async def advance(self, seconds: float) -> None:
        await self.advance_to(self._now + timedelta(seconds=seconds))

    @staticmethod
    async def settle(rounds: int = 20) -> None:
        """Let runnable tasks run until they block again (on this clock or on I/O)."""
        for _ in range(rounds):
            await asyncio.sleep(0)
