"""Schedules: named ones, validation, time zones and DST days (cronsim semantics)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from xclaw.chronos.schedule import Schedule
from xclaw.core.errors import ConfigError

BERLIN = ZoneInfo("Europe/Berlin")


def _day(y: int, m: int, d: int) -> tuple[datetime, datetime]:
    start = datetime(y, m, d, tzinfo=BERLIN)
    return start, datetime(y, m, d + 1, tzinfo=BERLIN)


@pytest.mark.parametrize(
    ("name", "cron"), [("@hourly", "0 * * * *"), ("@daily", "0 0 * * *"), ("@WEEKLY", "0 0 * * 0")]
)
def test_named_schedules_are_their_cron_lines(name: str, cron: str) -> None:
    assert Schedule.parse(name).cron == cron


@pytest.mark.parametrize(
    ("expr", "tz", "code"),
    [
        ("61 * * * *", "UTC", "CHRONOS_SCHEDULE_INVALID"),
        ("* * *", "UTC", "CHRONOS_SCHEDULE_INVALID"),
        ("@reboot", "UTC", "CHRONOS_SCHEDULE_INVALID"),
        ("0 0 30 2 *", "UTC", "CHRONOS_SCHEDULE_INVALID"),
        ("* * * * *", "Mars/Olympus", "CHRONOS_TIMEZONE_INVALID"),
    ],
)
def test_bad_schedules_are_refused_with_a_code(expr: str, tz: str, code: str) -> None:
    with pytest.raises(ConfigError) as err:
        Schedule.parse(expr, tz)
    assert err.value.code == code


@pytest.mark.parametrize(("day", "hours"), [((2026, 3, 29), 23), ((2026, 10, 25), 25)])
def test_every_minute_fires_at_every_real_minute_of_a_dst_day(
    day: tuple[int, int, int], hours: int
) -> None:
    start, end = _day(*day)
    fires = list(Schedule.parse("* * * * *", "Europe/Berlin").fires_between(start, end))
    first = start.astimezone(UTC) + timedelta(minutes=1)
    assert fires == [first + timedelta(minutes=i) for i in range(hours * 60)]


def test_fixed_time_in_the_skipped_hour_runs_when_it_ends() -> None:
    start, end = _day(2026, 3, 29)
    fires = list(Schedule.parse("30 2 * * *", "Europe/Berlin").fires_between(start, end))
    assert [f.astimezone(BERLIN).strftime("%H:%M %Z") for f in fires] == ["03:00 CEST"]


def test_fixed_time_in_the_repeated_hour_runs_once() -> None:
    start, end = _day(2026, 10, 25)
    fires = list(Schedule.parse("30 2 * * *", "Europe/Berlin").fires_between(start, end))
    assert [f.astimezone(BERLIN).strftime("%H:%M %Z") for f in fires] == ["02:30 CEST"]


def test_hourly_fires_at_both_two_oclocks_on_fall_back() -> None:
    start, end = _day(2026, 10, 25)
    fires = list(Schedule.parse("@hourly", "Europe/Berlin").fires_between(start, end))
    assert len(fires) == 25  # 01:00 ... 23:00, both 02:00s, and the next midnight (end)
    twos = [f for f in fires if f.astimezone(BERLIN).hour == 2]
    assert [f.astimezone(BERLIN).strftime("%Z") for f in twos] == ["CEST", "CET"]


def test_the_time_zone_moves_the_fire() -> None:
    after = datetime(2026, 5, 31, 12, 0, tzinfo=UTC)  # 21:00 in Tokyo
    tokyo = Schedule.parse("0 9 * * *", "Asia/Tokyo").next_after(after)
    assert tokyo == datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
