"""The scheduler on a manual clock: exact DST-day fires, no overlap, downtime policy, stop."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

import pytest
from chronos_support import TimedRunner

from xclaw.chronos.clock import ManualClock
from xclaw.chronos.engine import ChronosEngine, Job
from xclaw.chronos.schedule import Schedule
from xclaw.chronos.store import ChronosStore
from xclaw.core.events import Event, EventBus

BERLIN = ZoneInfo("Europe/Berlin")


def _job(
    root: Path,
    schedule: str = "* * * * *",
    missed: Literal["skip", "run_once"] = "skip",
    tz: str = "Europe/Berlin",
) -> Job:
    return Job("tick", Schedule.parse(schedule, tz), "check", root, missed=missed)


def _engine(
    root: Path, store: ChronosStore, clock: ManualClock, runner: TimedRunner, job: Job
) -> tuple[ChronosEngine, list[Event]]:
    bus = EventBus()
    events: list[Event] = []
    bus.subscribe(events.append)
    return ChronosEngine([job], store, runner, clock=clock, bus=bus), events


@pytest.fixture
def store(tmp_path: Path) -> ChronosStore:
    return ChronosStore(tmp_path / "chronos.db")


@pytest.mark.parametrize(("day", "minutes"), [((2026, 3, 29), 23 * 60), ((2026, 10, 25), 25 * 60)])
async def test_every_minute_across_a_dst_day_fires_exactly_on_time(
    root: Path, store: ChronosStore, day: tuple[int, int, int], minutes: int
) -> None:
    start = datetime(*day, tzinfo=BERLIN)
    end = start + timedelta(days=1)  # wall-clock arithmetic: the next local midnight
    end = datetime(end.year, end.month, end.day, tzinfo=BERLIN)
    clock = ManualClock(start - timedelta(seconds=30))
    runner = TimedRunner(clock, duration_s=20)  # each run takes 20 s of the day
    engine, _ = _engine(root, store, clock, runner, _job(root))
    await engine.start()
    await clock.advance_to(end - timedelta(seconds=1))
    await engine.stop(0)
    fired = [at for _, at in runner.started]
    first = start.astimezone(UTC)
    assert fired == [first + timedelta(minutes=i) for i in range(minutes)]
    assert len({sid for sid, _ in runner.started}) == minutes  # one session per fire
    assert all(r.status == "completed" for r in store.history("tick", 10_000))


async def test_an_overlong_run_never_overlaps_and_skipped_fires_are_recorded(
    root: Path, store: ChronosStore
) -> None:
    t0 = datetime(2026, 1, 5, 8, 0, 30, tzinfo=UTC)
    clock = ManualClock(t0)
    runner = TimedRunner(clock, duration_s=150)  # 2.5 minutes per run, fires every minute
    engine, events = _engine(root, store, clock, runner, _job(root, tz="UTC"))
    await engine.start()
    await clock.advance_to(t0 + timedelta(minutes=12))
    await engine.stop(0)
    assert runner.max_active == 1
    for (_, a_end), (b_start, _) in zip(runner.spans, runner.spans[1:], strict=False):
        assert b_start >= a_end
    minute = timedelta(minutes=1)
    fires = [t0.replace(second=0) + minute * i for i in range(1, 13)]
    # runs at 08:01, 08:04, 08:07, ...: the run ending at 08:03:30 makes 08:02 and 08:03 skip
    assert [at for _, at in runner.started] == fires[::3]
    rows = sorted(store.history("tick", 100), key=lambda r: r.fire_at)
    assert [datetime.fromtimestamp(r.fire_at, UTC) for r in rows] == fires
    skipped = [r for r in rows if r.status == "skipped"]
    assert len(skipped) == 8
    assert all(r.reason == "the previous run was still going" for r in skipped)
    assert sum(e.type == "chronos.skipped" for e in events) == 8


@pytest.mark.parametrize("policy", ["skip", "run_once"])
async def test_missed_fires_after_downtime_follow_the_policy(
    root: Path, store: ChronosStore, policy: Literal["skip", "run_once"]
) -> None:
    t0 = datetime(2026, 1, 5, 8, 0, 30, tzinfo=UTC)
    clock = ManualClock(t0)
    runner = TimedRunner(clock)
    job = _job(root, "*/5 * * * *", missed=policy, tz="UTC")
    engine, _ = _engine(root, store, clock, runner, job)
    await engine.start()
    await clock.advance_to(t0 + timedelta(minutes=10))  # fires 08:05 and 08:10
    await engine.stop(0)
    assert len(runner.started) == 2
    # Down from 08:10:30 until 09:02:00: fires 08:15 ... 09:00 (10 of them) are missed.
    later = ManualClock(datetime(2026, 1, 5, 9, 2, tzinfo=UTC))
    runner2 = TimedRunner(later)
    engine2, _ = _engine(root, store, later, runner2, job)
    await engine2.start()
    await later.advance_to(datetime(2026, 1, 5, 9, 6, tzinfo=UTC))
    await engine2.stop(0)
    missed = [r for r in store.history("tick", 100) if r.status == "missed"]
    ran = [at for _, at in runner2.started]
    nine_oh_five = datetime(2026, 1, 5, 9, 5, tzinfo=UTC)
    if policy == "skip":
        assert len(missed) == 10
        assert ran == [nine_oh_five]
    else:
        assert len(missed) == 9  # 08:15 ... 08:55; 09:00 runs once, at restart
        assert ran == [datetime(2026, 1, 5, 9, 2, tzinfo=UTC), nine_oh_five]
        catch_up = [r for r in store.history("tick", 100) if r.source == "catch-up"]
        assert [datetime.fromtimestamp(r.fire_at, UTC) for r in catch_up] == [
            datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        ]
    fire_instants = [r.fire_at for r in store.history("tick", 100)]
    assert len(fire_instants) == len(set(fire_instants)) == 13  # none doubled, none lost


async def test_a_long_downtime_records_a_bounded_number_of_missed_rows(
    root: Path, store: ChronosStore
) -> None:
    t0 = datetime(2026, 1, 5, 8, 0, 30, tzinfo=UTC)
    store.mark_seen("tick", t0.timestamp())
    clock = ManualClock(t0 + timedelta(days=7))  # a week: 10,080 minutes
    runner = TimedRunner(clock)
    engine, _ = _engine(root, store, clock, runner, _job(root, missed="run_once", tz="UTC"))
    await engine.start()
    await engine.stop(0)
    rows = store.history("tick", 1000)
    assert len(rows) == 101  # 100 missed rows kept; the latest fire runs
    assert len(runner.started) == 1
    [catch_up] = [r for r in rows if r.source == "catch-up"]
    assert catch_up.fire_at == (t0 + timedelta(days=7)).replace(second=0).timestamp()


async def test_a_paused_job_skips_and_records_its_fires(root: Path, store: ChronosStore) -> None:
    t0 = datetime(2026, 1, 5, 8, 0, 30, tzinfo=UTC)
    clock = ManualClock(t0)
    runner = TimedRunner(clock)
    engine, _ = _engine(root, store, clock, runner, _job(root, tz="UTC"))
    await engine.start()
    store.set_paused("tick", True)
    await clock.advance_to(t0 + timedelta(minutes=3))
    store.set_paused("tick", False)
    await clock.advance_to(t0 + timedelta(minutes=4))
    await engine.stop(0)
    statuses = [r.status for r in sorted(store.history("tick"), key=lambda r: r.fire_at)]
    assert statuses == ["skipped", "skipped", "skipped", "completed"]
    assert len(runner.started) == 1


async def test_a_stop_checkpoints_the_run_and_a_restart_resumes_it_without_a_new_fire(
    root: Path, store: ChronosStore
) -> None:
    t0 = datetime(2026, 1, 5, 8, 0, 30, tzinfo=UTC)
    clock = ManualClock(t0)
    runner = TimedRunner(clock, duration_s=3600)
    engine, _ = _engine(root, store, clock, runner, _job(root, "0 * * * *", tz="UTC"))
    await engine.start()
    await clock.advance_to(datetime(2026, 1, 5, 9, 0, 10, tzinfo=UTC))  # the 09:00 run is going
    await engine.stop(0)  # no time to finish: checkpointed
    [row] = store.history("tick")
    assert row.status == "interrupted"
    runner2 = TimedRunner(clock, duration_s=60)
    engine2, _ = _engine(root, store, clock, runner2, _job(root, "0 * * * *", tz="UTC"))
    await engine2.start()
    await clock.advance_to(datetime(2026, 1, 5, 9, 30, tzinfo=UTC))
    await engine2.stop(0)
    assert runner2.resumed == [row.session_id]
    assert runner2.started == []  # resumed, not fired again
    [again] = store.history("tick")
    assert (again.id, again.status) == (row.id, "completed")


async def test_a_stop_lets_a_short_run_finish(root: Path, store: ChronosStore) -> None:
    import asyncio

    t0 = datetime(2026, 1, 5, 8, 0, 50, tzinfo=UTC)
    clock = ManualClock(t0)
    runner = TimedRunner(clock, duration_s=5)
    engine, _ = _engine(root, store, clock, runner, _job(root, tz="UTC"))
    await engine.start()
    await clock.advance_to(datetime(2026, 1, 5, 8, 1, 2, tzinfo=UTC))
    stopping = asyncio.create_task(engine.stop(30))
    await clock.advance(10)  # the run ends within the stop timeout
    await stopping
    [row] = store.history("tick")
    assert row.status == "completed"


async def test_one_scheduler_per_data_file(root: Path, tmp_path: Path) -> None:
    from xclaw.core.errors import ConfigError

    clock = ManualClock(datetime(2026, 1, 5, 8, 0, 30, tzinfo=UTC))
    first, _ = _engine(root, ChronosStore(tmp_path / "c.db"), clock, TimedRunner(clock), _job(root))
    other = ChronosStore(tmp_path / "c.db")  # another process, as far as the lock knows
    second, _ = _engine(root, other, clock, TimedRunner(clock), _job(root))
    await first.start()
    with pytest.raises(ConfigError) as err:
        await second.start()
    assert err.value.code == "CHRONOS_ALREADY_RUNNING"
    await first.stop(0)
    await second.start()  # free again once the first stopped
    await second.stop(0)


@pytest.mark.parametrize("policy", ["skip", "run_once"])
async def test_waking_late_from_a_suspend_follows_the_policy(
    root: Path, store: ChronosStore, policy: Literal["skip", "run_once"]
) -> None:
    t0 = datetime(2026, 1, 5, 8, 0, 30, tzinfo=UTC)
    clock = ManualClock(t0)
    runner = TimedRunner(clock)
    engine, _ = _engine(root, store, clock, runner, _job(root, missed=policy, tz="UTC"))
    await engine.start()
    await clock.advance_to(t0 + timedelta(minutes=1))  # 08:01 runs on time
    await clock.jump_to(datetime(2026, 1, 5, 8, 30, 10, tzinfo=UTC))  # asleep until 08:30:10
    await clock.advance_to(datetime(2026, 1, 5, 8, 31, 30, tzinfo=UTC))  # 08:31 on time again
    await engine.stop(0)
    rows = sorted(store.history("tick", 100), key=lambda r: r.fire_at)
    assert len(rows) == 31  # 08:01 ... 08:31, each once
    assert [r.status for r in rows].count("missed") == (29 if policy == "skip" else 28)
    runs = [(r.source, datetime.fromtimestamp(r.fire_at, UTC).minute) for r in rows]
    ran = [x for x, r in zip(runs, rows, strict=True) if r.status == "completed"]
    expected = [("cron", 1), ("cron", 31)]
    assert ran == (expected if policy == "skip" else [expected[0], ("catch-up", 30), expected[1]])
