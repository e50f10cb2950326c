"""SIGTERM during a job of a real ``xclaw chronos run`` process, then a restart: the cut-off
run is resumed from its session, every fire instant is accounted for once, none is doubled."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from chronos_support import serve_app, wait_until
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from xclaw.chronos.schedule import Schedule
from xclaw.chronos.store import ChronosStore, FireRecord
from xclaw.gateway.server import GatewayServer

SCHEDULE = "*/2 * * * * *"  # every two seconds (cronsim's six-field form, seconds first)


class SlowTarget:
    """A notification webhook whose first request hangs (the run is mid-call at SIGTERM)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.first = threading.Event()
        self.done = False  # set at teardown: the hanging request may end

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/notify")
        async def notify(request: Request) -> JSONResponse:
            self.bodies.append(await request.json())
            if len(self.bodies) == 1:
                self.first.set()
                for _ in range(600):  # far beyond the stop timeout
                    if self.done:
                        break
                    await asyncio.sleep(0.05)
            return JSONResponse({"ok": True})

        return app


@pytest.fixture
def target() -> Iterator[tuple[SlowTarget, GatewayServer]]:
    slow = SlowTarget()
    server = serve_app(slow.app())
    try:
        yield slow, server
    finally:
        slow.done = True
        server.stop()


def _configure(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    call = {"name": "notify", "arguments": {"title": "beat", "message": "tick"}}
    script.write_text(yaml.safe_dump([{"tool_calls": [call]}, "done"]))
    config = {
        "model": f"scripted:{script}",
        "chronos": {
            "stop_timeout_s": 0.5,
            "jobs": [
                {
                    "id": "beat",
                    "schedule": SCHEDULE,
                    "timezone": "UTC",
                    "task": "Send the beat.",
                    "channel": "slow",
                    "directory": str(root),
                }
            ],
            "targets": {"slow": {"type": "webhook", "url_env": "SLOW_URL"}},
        },
    }
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "xclaw"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "xclaw.yaml").write_text(yaml.safe_dump(config))


def _start(root: Path, url: str, log: Path) -> subprocess.Popen[bytes]:
    code = "from xclaw.cli.chronos_cmd import app; app(prog_name='xclaw chronos')"
    env = {**os.environ, "SLOW_URL": f"{url}/notify", "XCLAW_SANDBOX": "host"}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-c", code, "run", "-C", str(root)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )


def _terminate(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=20)


def _fires(store: ChronosStore) -> list[FireRecord]:
    return sorted(store.history("beat", 1000), key=lambda r: r.fire_at)


def test_sigterm_mid_job_then_restart_loses_and_doubles_no_fire(
    root: Path, tmp_path: Path, target: tuple[SlowTarget, GatewayServer]
) -> None:
    slow, server = target
    _configure(root, tmp_path)
    log = tmp_path / "chronos.log"
    db = Path(os.environ["XDG_DATA_HOME"]) / "xclaw" / "chronos.db"

    first = _start(root, server.url, log)
    try:
        assert slow.first.wait(30), log.read_text()
    finally:
        code = _terminate(first)
    assert code == 0, log.read_text()
    store = ChronosStore(db)
    cut = [r for r in _fires(store) if r.source == "cron" and r.session_id]
    assert [r.status for r in cut] == ["interrupted"], log.read_text()
    interrupted = cut[0]

    second = _start(root, server.url, log)
    try:
        wait_until(lambda: sum(r.status == "completed" for r in _fires(store)) >= 2, timeout=40)
    finally:
        code = _terminate(second)
    assert code == 0, log.read_text()

    fires = _fires(store)
    resumed = next(r for r in fires if r.id == interrupted.id)
    assert (resumed.status, resumed.session_id) == ("completed", interrupted.session_id)
    instants = [r.fire_at for r in fires]
    assert len(instants) == len(set(instants)), "a fire instant was recorded twice"
    # Every instant of the schedule from the first fire to the last is accounted for.
    begin = datetime.fromtimestamp(instants[0], UTC) - timedelta(seconds=1)
    end = datetime.fromtimestamp(instants[-1], UTC)
    expected = [t.timestamp() for t in Schedule.parse(SCHEDULE).fires_between(begin, end)]
    assert instants == expected
    assert {r.status for r in fires} <= {"completed", "skipped", "missed", "started"}
    # Each run notified once; the call cut off by SIGTERM was not sent again on resume.
    sessions = [b["session_id"] for b in slow.bodies]
    assert len(sessions) == len(set(sessions))
    ran = {r.session_id for r in fires if r.status == "completed"}
    assert set(sessions) <= ran | {r.session_id for r in fires if r.status == "started"}
    assert interrupted.session_id in sessions
    text = log.read_text()
    assert "chronos stopped" in text and json.dumps("interrupted") not in text
