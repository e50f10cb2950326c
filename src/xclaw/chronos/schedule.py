"""Cron schedules in a time zone, evaluated by cronsim (Debian cron semantics for DST).

Five fields (``*/15 * * * *``), six with seconds first (``*/10 * * * * *``), or a named
schedule (``@hourly``, ``@daily`` ...). A fixed-time job on a spring-forward day runs when the
skipped hour ends; on a fall-back day it runs once. Interval jobs (``*`` in minute or hour)
fire at every real instant that matches, so an every-minute job fires 1,380 times on a 23-hour
day and 1,500 on a 25-hour one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from xclaw.core.errors import ConfigError

__all__ = ["NAMED_SCHEDULES", "Schedule"]

# The names Vixie cron knows (@reboot aside: a scheduler restart is not a boot).
NAMED_SCHEDULES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@dataclass(frozen=True, slots=True)
class Schedule:
    expression: str
    cron: str
    tz: ZoneInfo

    @classmethod
    def parse(cls, expression: str, timezone: str = "UTC") -> Schedule:
        text = " ".join(expression.split())
        cron = NAMED_SCHEDULES.get(text.lower(), text)
        if cron.startswith("@"):
            raise ConfigError(
                f"Schedule {expression!r} is not a known name.",
                code="CHRONOS_SCHEDULE_INVALID",
                hint="Use " + ", ".join(NAMED_SCHEDULES) + " or five cron fields.",
            )
        try:
            tz = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                f"Time zone {timezone!r} is unknown.",
                code="CHRONOS_TIMEZONE_INVALID",
                hint="Use an IANA name such as Europe/Berlin or UTC.",
            ) from None
        schedule = cls(text, cron, tz)
        try:
            schedule.next_after(datetime.now(UTC))
        except (CronSimError, StopIteration, ValueError) as err:
            raise ConfigError(
                f"Schedule {expression!r} is not valid cron: {err or 'it never fires'}.",
                code="CHRONOS_SCHEDULE_INVALID",
                hint="Five fields: minute hour day-of-month month day-of-week.",
            ) from None
        return schedule

    def next_after(self, after: datetime) -> datetime:
        """The first fire strictly after ``after`` (aware), as a UTC instant."""
        local = after.astimezone(self.tz)
        return next(CronSim(self.cron, local)).astimezone(UTC)

    def fires_between(self, start: datetime, end: datetime) -> Iterator[datetime]:
        """Fires in ``(start, end]``, in order."""
        t = self.next_after(start)
        while t <= end:
            yield t
            t = self.next_after(t)
