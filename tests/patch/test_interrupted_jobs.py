"""A job whose process died reads ``interrupted``, with the way to clean up (issue 21, item 6).

A real ``xclaw patch run`` process is stopped while its check runs: by SIGKILL (nothing of
xclaw runs afterwards: the record's process mark tells it is gone) and by Ctrl+C (SIGINT: the
job saves itself as interrupted and removes its worktree on the way out). ``patch list`` and
``patch show`` say so and print ``xclaw patch clean JOB``; clean removes what was left; the
project is not locked by the dead job.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from tests.patch.test_patch_job import HI, call, job
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.dirs import config_dir
from xclaw.patch import JobStore
from xclaw.sandbox.host import HostSandbox

pytestmark = pytest.mark.timeout(120)


def _wait_for(check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.fixture
def started(tmp_path: Path) -> Iterator[Path]:
    """The marker the slow check writes (its pid) once it runs; the check is ended after."""
    marker = tmp_path / "check-started"
    yield marker
    if marker.exists():
        try:
            os.kill(int(marker.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def slow_check_config(marker: Path) -> None:
    """The user's config: host commands and a check that blocks (it names its own pid)."""
    code = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(90)"
    config = {
        "sandbox": {"mode": "host"},
        "checks": {"slow": {"command": [sys.executable, "-c", code], "required": True}},
    }
    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "xclaw.yaml").write_text(yaml.safe_dump(config))


def start_job(repo: Path, tmp_path: Path) -> subprocess.Popen[bytes]:
    script = tmp_path / "script.yaml"
    turns = [{"tool_calls": [HI, call("run_check", "c1", checkId="slow")]}, "done"]
    script.write_text(yaml.safe_dump(turns))
    argv = [sys.executable, "-m", "xclaw", "patch", "run", "-C", str(repo)]
    argv += ["--model", f"scripted:{script}", "--target", "src/app.py:2", "say hi"]
    with (tmp_path / "stderr.txt").open("wb") as err:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=dict(os.environ))


def stop(proc: subprocess.Popen[bytes], sig: signal.Signals, marker: Path) -> None:
    try:
        _wait_for(marker.exists)
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def the_job_id() -> str:
    (path,) = JobStore().jobs.glob("*.json")
    return path.stem


def stored_status(job_id: str) -> str:
    body = json.loads((JobStore().jobs / f"{job_id}.json").read_text())
    return str(body.get("record", body)["status"])


def test_a_sigkilled_job_is_interrupted_and_cleaned_up(
    repo: Path, tmp_path: Path, started: Path
) -> None:
    slow_check_config(started)
    stop(start_job(repo, tmp_path), signal.SIGKILL, started)
    job_id = the_job_id()
    assert stored_status(job_id) == "running"  # nothing ran after the kill
    record = JobStore().load(job_id)
    assert record.status == "interrupted" and "PATCH_INTERRUPTED" in record.reason
    leftovers = list((JobStore().base / "worktrees").glob(f"*-{job_id}"))
    assert len(leftovers) == 1  # the killed process could not remove its worktree

    runner = CliRunner()
    listed = runner.invoke(app, ["patch", "list"]).output
    assert re.search(rf"{job_id}\s+interrupted", listed), listed
    assert f"xclaw patch clean {job_id}" in listed
    shown = runner.invoke(app, ["patch", "show", job_id]).output
    assert "interrupted" in shown and f"xclaw patch clean {job_id}" in shown
    assert str(leftovers[0]) in shown
    refused = runner.invoke(app, ["patch", "apply", job_id])
    assert refused.exit_code != 0  # (a gate or its state refuses it; never applied)
    assert "'hello'" in (repo / "src" / "app.py").read_text()

    cleaned = runner.invoke(app, ["patch", "clean", job_id])
    assert cleaned.exit_code == 0, cleaned.output
    assert not leftovers[0].exists()
    assert stored_status(job_id) == "interrupted"
    assert "xclaw patch clean" not in runner.invoke(app, ["patch", "show", job_id]).output

    # The dead job's project lock does not block the next job.
    again = asyncio.run(job(repo, [{"tool_calls": [HI]}, "done"], HostSandbox()).run())
    assert again.status == "review", again.reason


def test_ctrl_c_saves_the_job_as_interrupted(repo: Path, tmp_path: Path, started: Path) -> None:
    slow_check_config(started)
    proc = start_job(repo, tmp_path)
    stop(proc, signal.SIGINT, started)
    assert proc.returncode != 0
    job_id = the_job_id()
    assert stored_status(job_id) == "interrupted"  # saved by the job on its way out
    assert not list((JobStore().base / "worktrees").glob(f"*-{job_id}"))  # removed too
    assert JobStore().load(job_id).status == "interrupted"


def test_a_running_job_of_a_live_process_stays_running(repo: Path) -> None:
    from xclaw.patch.job import JobRecord, JobSpec, ProcessMark, settle

    spec = JobSpec(
        "20260101-000000-abcdef01",
        "s",
        (),
        "m",
        str(repo),
        "h",
        "d",
        "review",
        "require-clean",
        False,
        (),
    )
    alive = JobRecord(spec)  # this test's own process
    assert settle(alive).status == "running"
    reused = JobRecord(spec, owner=ProcessMark(os.getpid(), "1", ProcessMark.current().boot))
    assert settle(reused).status == "interrupted"  # same pid, another start time
    rebooted = JobRecord(spec, owner=ProcessMark(os.getpid(), ProcessMark.current().started, "x"))
    assert settle(rebooted).status == "interrupted"
