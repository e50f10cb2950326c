"""The scheduler: drift-free cron fires, a guard against overlapping runs, the missed-fire
policy after downtime, event-driven runs, and a graceful stop.

The next fire is always computed from the schedule and the previous *fire instant*, never
from when a run ended, so runs of any length cause no drift. A fire is persisted before its
run starts; a fire that comes while the job's previous run is still going is skipped and
recorded. On start, fires the scheduler was down for follow the job's policy (``skip``: each
is recorded as missed; ``run_once``: the latest one runs), and runs a stop or a crash cut off
are resumed from their durable sessions, not fired again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from cronsim import CronSim

from xclaw.chronos.clock import Clock, SystemClock
from xclaw.chronos.runner import JobRunner, RunOutcome, RunRequest
from xclaw.chronos.schedule import Schedule
from xclaw.chronos.store import ChronosStore, FireRecord, FireStatus
from xclaw.core.events import Event, EventBus, EventType
from xclaw.core.state import RunControl

__all__ = ["ChronosEngine", "Job", "session_id_for"]

log = logging.getLogger(__name__)
_MAX_MISSED_ROWS = 100  # a week of downtime must not write 10,000 rows for one job
_REPLY_CLIP = 2000
_LATE_GRACE = timedelta(seconds=60)  # a fire woken later than this counts as missed
_EVENT_RUNS = 4  # webhook and subscription runs at once; more wait their turn


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    schedule: Schedule
    task: str
    directory: Path
    model: str | None = None
    channel: str | None = None
    enabled: bool = True
    max_steps: int = 15
    missed: Literal["skip", "run_once"] = "skip"

    def request(self, session_id: str) -> RunRequest:
        return RunRequest(
            self.id,
            session_id,
            self.task,
            self.directory,
            self.model,
            self.max_steps,
            self.channel,
        )


def session_id_for(job_id: str, at: datetime, unique: bool = False) -> str:
    stamp = at.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"chronos-{job_id}-{stamp}" + (f"-{secrets.token_hex(3)}" if unique else "")


def _request_json(request: RunRequest) -> str:
    return json.dumps(asdict(request) | {"directory": str(request.directory)})


def _request_from(record: FireRecord) -> RunRequest | None:
    try:
        data: dict[str, Any] = json.loads(record.request)
        data["directory"] = Path(data["directory"])
        return RunRequest(**data)
    except (ValueError, KeyError, TypeError):
        return None


class ChronosEngine:
    def __init__(
        self,
        jobs: list[Job],
        store: ChronosStore,
        runner: JobRunner,
        *,
        clock: Clock | None = None,
        bus: EventBus | None = None,
    ) -> None:
        self.jobs = {job.id: job for job in jobs}
        self.store = store
        self.runner = runner
        self.clock: Clock = clock or SystemClock()
        self.bus = bus or EventBus()
        self._running: dict[str, asyncio.Task[None]] = {}  # job id -> its run: the guard
        self._events: set[asyncio.Task[None]] = set()  # webhook and subscription runs
        self._controls: dict[int, RunControl] = {}  # fire id -> its run's control
        self._loops: list[asyncio.Task[None]] = []
        self._stopping = False
        self._event_slots = asyncio.Semaphore(_EVENT_RUNS)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Resume cut-off runs, apply the missed-fire policy, then schedule every job."""
        self._stopping = False
        self.store.claim_scheduler()
        for record in self.store.open_fires():
            self._resume(record)
        for job in self.jobs.values():
            if job.enabled:
                anchor = self._catch_up(job)
                self._loops.append(asyncio.create_task(self._job_loop(job, anchor)))

    async def stop(self, timeout_s: float = 30.0) -> None:
        """Let running jobs finish for ``timeout_s``; then checkpoint them (the run stops at
        once, its session is kept, the fire is marked ``interrupted`` to resume later)."""
        self._stopping = True
        for loop in self._loops:
            loop.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops.clear()
        runs = self._all_runs()
        if runs:
            _, pending = await asyncio.wait(runs, timeout=timeout_s)
            if pending:
                for control in list(self._controls.values()):
                    control.interrupt()  # pause at the next boundary ...
                    control.interrupt()  # ... and cancel what is running now
                _, pending = await asyncio.wait(pending, timeout=5.0)
            for task in pending:
                task.cancel()
            await asyncio.gather(*runs, return_exceptions=True)
        self.store.release_scheduler()

    async def wait_idle(self) -> None:
        """Wait until no run is going (tests, ``run-now``)."""
        while runs := self._all_runs():
            await asyncio.gather(*runs, return_exceptions=True)

    def _all_runs(self) -> list[asyncio.Task[None]]:
        return [*self._running.values(), *self._events]

    # -- scheduling --------------------------------------------------------------------------
    def _catch_up(self, job: Job) -> datetime:
        """Apply the missed-fire policy; returns the instant the schedule continues after."""
        now = self.clock.now()
        last = self.store.last_fire(job.id)
        if last is None:
            self.store.mark_seen(job.id, now.timestamp())
            return now
        anchor = datetime.fromtimestamp(last, UTC)
        missed = _capped(job.schedule, anchor, now)
        if missed:
            self._apply_policy(job, missed)
        return max(anchor, missed[-1]) if missed else anchor

    def _apply_policy(self, job: Job, missed: list[datetime]) -> None:
        """Fires that passed while nothing could run them: all recorded as missed, or the
        latest one run now (``run_once``)."""
        run_latest = job.missed == "run_once"
        for t in missed[:-1] if run_latest else missed:
            self.store.record_skip(job.id, t.timestamp(), "missed", "the scheduler was not running")
            self._emit("chronos.skipped", "", job.id, fire_at=t.isoformat(), why="missed")
        if run_latest:
            self._fire(job, missed[-1], source="catch-up")

    async def _job_loop(self, job: Job, anchor: datetime) -> None:
        t = job.schedule.next_after(anchor)
        while True:
            await self.clock.sleep_until(t)
            now = self.clock.now()
            due = [t, *_capped(job.schedule, t, now)]
            if now - due[-1] > _LATE_GRACE or len(due) > 1:
                # Woken long after the fire (a suspended machine): the policy decides.
                self._apply_policy(job, due)
            else:
                self._fire(job, t, source="cron")
            t = job.schedule.next_after(due[-1])

    def _fire(self, job: Job, at: datetime, *, source: str) -> None:
        ts = at.timestamp()
        if self.store.is_paused(job.id):
            if self.store.record_skip(job.id, ts, "skipped", "the job is paused", source):
                self._emit("chronos.skipped", "", job.id, fire_at=at.isoformat(), why="paused")
            return
        busy = self._running.get(job.id)
        if busy is not None:
            reason = "the previous run was still going"
            if self.store.record_skip(job.id, ts, "skipped", reason, source):
                self._emit("chronos.skipped", "", job.id, fire_at=at.isoformat(), why="overlap")
            return
        sid = session_id_for(job.id, at, unique=source == "manual")
        request = job.request(sid)
        fire_id = self.store.begin_fire(job.id, ts, sid, source, _request_json(request))
        if fire_id is None:
            return  # this instant was fired already (another scheduler on the same data)
        self._emit("chronos.fired", sid, job.id, fire_at=at.isoformat(), trigger=source)
        self._running[job.id] = asyncio.create_task(self._run(fire_id, request, resume=False))

    def fire_now(self, job_id: str) -> bool:
        """Run a job now (``run-now``), outside its schedule; False when it is running."""
        job = self.jobs[job_id]
        if job_id in self._running:
            return False
        self._fire(job, self.clock.now(), source="manual")
        return job_id in self._running

    def submit(self, request: RunRequest, source: str) -> int:
        """An event-driven run (a webhook delivery, a subscription)."""
        now = self.clock.now().timestamp()
        fire_id = self.store.begin_fire(
            request.job_id, now, request.session_id, source, _request_json(request)
        )
        assert fire_id is not None  # only cron sources can be refused
        self._emit("chronos.fired", request.session_id, request.job_id, trigger=source)
        self._track(asyncio.create_task(self._run_event(fire_id, request)))
        return fire_id

    async def _run_event(self, fire_id: int, request: RunRequest) -> None:
        async with self._event_slots:
            await self._run(fire_id, request, resume=False)

    def _track(self, task: asyncio.Task[None]) -> None:
        self._events.add(task)
        task.add_done_callback(self._events.discard)

    def _resume(self, record: FireRecord) -> None:
        request = _request_from(record)
        if request is None:
            self.store.finish(record.id, "failed", "the recorded request cannot be read")
            return
        task = asyncio.create_task(self._run(record.id, request, resume=True))
        if record.job_id in self.jobs:
            self._running[record.job_id] = task  # the guard holds while it resumes
        else:
            self._track(task)

    # -- one run -----------------------------------------------------------------------------
    async def _run(self, fire_id: int, request: RunRequest, *, resume: bool) -> None:
        control = RunControl()
        self._controls[fire_id] = control
        try:
            run = self.runner.resume if resume else self.runner.start
            outcome = await run(request, control)
        except asyncio.CancelledError:
            self.store.finish(fire_id, "interrupted", "stopped; resumes at the next start")
            raise
        except Exception as err:  # noqa: BLE001 - a broken run must not stop the scheduler
            reason = f"{type(err).__name__}: {err}"
            self.store.finish(fire_id, "failed", reason[:_REPLY_CLIP])
            self._emit("chronos.failed", request.session_id, request.job_id, reason=reason)
            return
        finally:
            self._controls.pop(fire_id, None)
            if self._running.get(request.job_id) is asyncio.current_task():
                del self._running[request.job_id]
        self._settle(fire_id, request, outcome)

    def _settle(self, fire_id: int, request: RunRequest, outcome: RunOutcome) -> None:
        status: FireStatus
        if outcome.status == "interrupted" and self._stopping:
            status = "interrupted"  # checkpointed by our stop: resumed at the next start
        elif outcome.status == "interrupted":
            status = "limited"
        else:
            status = outcome.status
        reply = outcome.reply[:_REPLY_CLIP]
        self.store.finish(fire_id, status, outcome.summary()[:_REPLY_CLIP], reply)
        if status == "interrupted":
            return
        self._emit(
            "chronos.finished",
            request.session_id,
            request.job_id,
            status=status,
            reply=reply,
            reason=outcome.summary(),
            denied=len(outcome.denied),
        )
        if status == "failed":
            reason = outcome.summary()
            self._emit("chronos.failed", request.session_id, request.job_id, reason=reason)

    def _emit(self, kind: EventType, session_id: str, source: str, **payload: Any) -> None:
        self.bus.emit(Event(kind, session_id, 0, {"source": source, **payload}))


def _capped(schedule: Schedule, start: datetime, end: datetime) -> list[datetime]:
    """Fires in ``(start, end]``: the first ``_MAX_MISSED_ROWS`` and always the last one
    (a long downtime is not walked minute by minute)."""
    out: list[datetime] = []
    for t in schedule.fires_between(start, end):
        if len(out) == _MAX_MISSED_ROWS:
            last = _last_fire_until(schedule, end)
            if last is not None and last > out[-1]:
                out.append(last)
            break
        out.append(t)
    return out


def _last_fire_until(schedule: Schedule, end: datetime) -> datetime | None:
    """The latest fire at or before ``end``."""
    # cronsim's reverse iteration ticks back one second first: start one second later.
    local = (end.replace(microsecond=0) + timedelta(seconds=1)).astimezone(schedule.tz)
    with contextlib.suppress(StopIteration):
        return next(CronSim(schedule.cron, local, reverse=True)).astimezone(UTC)
    return None
