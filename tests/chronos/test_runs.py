"""Fires as durable agent sessions: CHRONOS MODE, denied approvals, the step cap, notify."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from chronos_support import jsonl

from xclaw.chronos.clock import ManualClock
from xclaw.chronos.service import ChronosService, ServiceOptions
from xclaw.chronos.store import ChronosStore
from xclaw.config import XclawConfig
from xclaw.core.events import Event
from xclaw.models.scripted import ScriptedModel
from xclaw.sandbox import make_sandbox
from xclaw.store.sqlite import SqliteStore

T0 = datetime(2026, 1, 5, 8, 0, 30, tzinfo=UTC)


def _service(
    tmp_path: Path,
    root: Path,
    chronos: dict[str, Any],
    script: list[Any],
    *,
    env: dict[str, str] | None = None,
) -> tuple[ChronosService, ManualClock, list[ScriptedModel], io.StringIO]:
    models: list[ScriptedModel] = []

    def model_for(_spec: str | None, _dir: Path) -> ScriptedModel:
        models.append(ScriptedModel(script))
        return models[-1]

    out = io.StringIO()
    clock = ManualClock(T0)
    options = ServiceOptions(
        clock=clock,
        model_for=model_for,
        dead_letters=tmp_path / "dead.jsonl",
        stdout=out,
        sandbox=lambda: make_sandbox("host").sandbox,  # host mode: commands ask first
        notify_sleep=_no_sleep,
    )
    service = ChronosService(
        XclawConfig.model_validate({"chronos": chronos}),
        root,
        env or {},
        store=SqliteStore(tmp_path / "xclaw.db"),
        chronos_store=ChronosStore(tmp_path / "chronos.db"),
        options=options,
    )
    return service, clock, models, out


async def _no_sleep(_s: float) -> None:
    return None


def _job(**extra: Any) -> dict[str, Any]:
    return {"id": "disk", "schedule": "*/5 * * * *", "task": "Check the disk.", **extra}


async def _one_fire(service: ChronosService, clock: ManualClock) -> None:
    await service.start()
    await clock.advance_to(T0 + timedelta(minutes=5))
    await service.engine.wait_idle()
    await service.stop()


async def test_a_fire_is_a_durable_session_in_chronos_mode_and_notifies(
    tmp_path: Path, root: Path
) -> None:
    call = {"name": "notify", "arguments": {"title": "Disk 97%", "message": "/ is full"}}
    script: list[Any] = [{"tool_calls": [call]}, "Alerted."]
    chronos = {"jobs": [_job(channel="ops")], "targets": {"ops": {"type": "stdout"}}}
    service, clock, models, out = _service(tmp_path, root, chronos, script)
    events: list[Event] = []
    service.bus.subscribe(events.append)
    await _one_fire(service, clock)
    [model] = models
    model.assert_complete()
    system = model.requests[0].messages[0].text
    assert "[CHRONOS MODE" in system and "at most 15 tool calls" in system
    [row] = service.chronos_store.history("disk")
    assert (row.status, row.reply) == ("completed", "Alerted.")
    assert row.session_id == "chronos-disk-20260105T080500Z"
    session = service.runner.store.get_session(row.session_id)
    assert session is not None and session.state == "success"
    assert "[WARNING] Disk 97%" in out.getvalue()
    kinds = [e.type for e in events]
    assert kinds.index("chronos.fired") < kinds.index("notify.sent") < kinds.index("run.completed")
    assert "chronos.finished" in kinds
    [completed] = [e for e in events if e.type == "run.completed"]
    assert completed.payload["source"] == "disk"  # run events are tagged with their job


async def test_an_approval_nobody_can_give_is_denied_and_reported(
    tmp_path: Path, root: Path
) -> None:
    argv = ["-c", "echo hi > out.txt"]
    call = {"name": "terminal.exec", "arguments": {"program": "sh", "argv": argv}}
    script: list[Any] = [
        {"tool_calls": [call], "text": "Writing."},
        {"text": "Could not write.", "expect": {"last_contains": ["APPROVAL_DENIED"]}},
    ]
    service, clock, models, _ = _service(tmp_path, root, {"jobs": [_job()]}, script)
    events: list[Event] = []
    service.bus.subscribe(events.append)
    await _one_fire(service, clock)
    models[0].assert_complete()
    assert not (root / "out.txt").exists()
    [row] = service.chronos_store.history("disk")
    assert row.status == "completed"
    assert "1 approval(s) denied: terminal.exec" in row.reason
    denied = [e for e in events if e.type == "approval.denied"]
    assert [e.payload["tool"] for e in denied] == ["terminal.exec"]
    [finished] = [e for e in events if e.type == "chronos.finished"]
    assert finished.payload["denied"] == 1


async def test_the_step_cap_ends_the_run_as_limited(tmp_path: Path, root: Path) -> None:
    (root / "a.txt").write_text("x")
    read = {"name": "fs.read", "arguments": {"path": "a.txt"}}
    script: list[Any] = [{"tool_calls": [read]}] * 5
    service, clock, models, _ = _service(tmp_path, root, {"jobs": [_job(max_steps=2)]}, script)
    await _one_fire(service, clock)
    assert models[0].position == 2  # the third turn was never asked for
    [row] = service.chronos_store.history("disk")
    assert row.status == "limited"
    assert "LIMIT_STEPS" in row.reason


async def test_a_failing_target_is_retried_then_dead_lettered(tmp_path: Path, root: Path) -> None:
    call = {"name": "notify", "arguments": {"title": "Down", "message": "api 500"}}
    script: list[Any] = [
        {"tool_calls": [call]},
        {"text": "Reported.", "expect": {"last_contains": ["NOTIFY_FAILED"]}},
    ]
    secret_url = "http://127.0.0.1:9/hook/very-secret-token-123"
    chronos = {
        "jobs": [_job(channel="hook")],
        "targets": {"hook": {"type": "webhook", "url_env": "HOOK_URL"}},
        "notify_attempts": 3,
    }
    service, clock, models, _ = _service(
        tmp_path, root, chronos, script, env={"HOOK_URL": secret_url}
    )
    waits: list[float] = []

    async def record(s: float) -> None:
        waits.append(s)

    service.notifier.sleep = record
    await _one_fire(service, clock)
    models[0].assert_complete()
    assert waits == [1.0, 2.0]  # exponential, bounded by the attempt count
    [dead] = jsonl(tmp_path / "dead.jsonl")
    assert (dead["target"], dead["title"], dead["attempts"]) == ("hook", "Down", 3)
    assert "very-secret-token" not in (tmp_path / "dead.jsonl").read_text()


def test_a_missing_secret_is_named_not_shown(tmp_path: Path, root: Path) -> None:
    from xclaw.core.errors import ConfigError

    chronos = {"hooks": {"gh": {"secret_env": "GH_HOOK_SECRET", "task": "x"}}}
    with pytest.raises(ConfigError) as err:
        _service(tmp_path, root, chronos, [])
    assert err.value.code == "CHRONOS_SECRET_MISSING" and "GH_HOOK_SECRET" in err.value.message


async def test_a_subscription_starts_a_run_and_never_loops(tmp_path: Path, root: Path) -> None:
    chronos = {
        "jobs": [_job()],
        "subscriptions": [
            {"events": ["chronos.finished"], "task": "Summarise: {{event.reply}}", "max_steps": 3}
        ],
    }
    service, clock, models, _ = _service(tmp_path, root, chronos, ["Fine."])
    await service.start()
    await clock.advance_to(T0 + timedelta(minutes=5))
    for _ in range(3):
        await service.engine.wait_idle()
        await clock.settle()
    await service.stop()
    rows = sorted(service.chronos_store.history(), key=lambda r: r.id)
    assert [(r.job_id, r.source, r.status) for r in rows] == [
        ("disk", "cron", "completed"),
        ("sub:0", "event", "completed"),  # the run's own finish starts nothing more
    ]
    task = models[1].requests[0].messages[1].text
    assert "Summarise: <untrusted-data>Fine.</untrusted-data>" in task


def test_subscriptions_are_checked(tmp_path: Path, root: Path) -> None:
    from xclaw.core.errors import ConfigError

    bad: list[dict[str, Any]] = [
        {"events": ["chronos.nope"], "notify": "o"},
        {"events": ["chronos.failed"]},
        {"events": ["chronos.failed"], "notify": "missing"},
    ]
    for sub in bad:
        chronos = {"targets": {"o": {"type": "stdout"}}, "subscriptions": [sub]}
        with pytest.raises(ConfigError):
            _service(tmp_path, root, chronos, [])


async def test_a_fire_recorded_before_a_crash_runs_once_at_restart(
    tmp_path: Path, root: Path
) -> None:
    import json

    service, clock, models, _ = _service(tmp_path, root, {"jobs": [_job()]}, ["All normal."])
    sid = "chronos-disk-20260105T080000Z"
    request = {"job_id": "disk", "session_id": sid, "task": "Check the disk."}
    request |= {"directory": str(root), "model": None, "max_steps": 15, "channel": None}
    fire_at = (T0 - timedelta(seconds=30)).timestamp()
    # The process died right after persisting the fire, before the run made its session.
    assert service.chronos_store.begin_fire("disk", fire_at, sid, "cron", json.dumps(request))
    assert service.runner.store.get_session(sid) is None
    await service.start()
    await service.engine.wait_idle()
    await service.stop()
    [row] = service.chronos_store.history("disk")
    assert (row.session_id, row.status, row.reply) == (sid, "completed", "All normal.")
    assert len(models) == 1  # run once, under the recorded session id; no new fire
