"""``xclaw chronos`` commands against real stores, and where chronos may be configured."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from xclaw.chronos.store import open_chronos_store
from xclaw.cli.chronos_cmd import app
from xclaw.config import load_config
from xclaw.core.errors import ConfigError

runner = CliRunner()


def _user_config(tmp_path: Path, root: Path, **chronos: Any) -> None:
    script = tmp_path / "script.yaml"
    call = {"name": "notify", "arguments": {"title": "Disk", "message": "full"}}
    script.write_text(yaml.safe_dump([{"tool_calls": [call]}, "Alerted."]))
    section = {
        "jobs": [{"id": "disk", "schedule": "@hourly", "task": "Check.", "channel": "down"}],
        "targets": {"down": {"type": "webhook", "url_env": "DOWN_URL"}},
        "notify_attempts": 1,
        **chronos,
    }
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "xclaw"
    folder.mkdir(parents=True, exist_ok=True)
    config = {"model": f"scripted:{script}", "chronos": section}
    (folder / "xclaw.yaml").write_text(yaml.safe_dump(config))


@pytest.fixture
def configured(tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DOWN_URL", "http://127.0.0.1:9/notify")
    monkeypatch.setenv("XCLAW_SANDBOX", "host")
    _user_config(tmp_path, root)
    return root


def test_list_pause_unpause(configured: Path) -> None:
    out = runner.invoke(app, ["list", "-C", str(configured)])
    assert out.exit_code == 0, out.output
    assert "disk" in out.output and "@hourly" in out.output and "active" in out.output
    assert runner.invoke(app, ["pause", "disk", "-C", str(configured)]).exit_code == 0
    assert open_chronos_store().is_paused("disk")
    assert "paused" in runner.invoke(app, ["list", "-C", str(configured)]).output
    unpaused = runner.invoke(app, ["unpause", "disk", "-C", str(configured)])
    assert unpaused.exit_code == 0 and "disk unpaused" in unpaused.output
    assert not open_chronos_store().is_paused("disk")
    assert "active" in runner.invoke(app, ["list", "-C", str(configured)]).output
    missing = runner.invoke(app, ["pause", "nosuch", "-C", str(configured)])
    assert missing.exit_code == 2 and "CHRONOS_JOB_NOT_FOUND" in missing.output


def test_resume_was_renamed_unpause_and_says_so(configured: Path) -> None:
    # `xclaw resume` continues a session; the job's old `chronos resume` only points to the
    # new name, with whatever it is given, and changes nothing.
    open_chronos_store().set_paused("disk", True)
    for args in (["resume", "disk", "-C", str(configured)], ["resume"], ["resume", "-x", "y"]):
        out = runner.invoke(app, args)
        assert out.exit_code == 2, out.output
        [line] = out.output.splitlines()
        assert line == (
            "COMMAND_RENAMED: `xclaw chronos resume` was renamed `xclaw chronos unpause`. "
            "Run `xclaw chronos unpause JOB`; `xclaw resume` continues a session."
        )
    assert open_chronos_store().is_paused("disk")
    helped = runner.invoke(app, ["resume", "--help"])
    assert helped.exit_code == 0 and "Renamed: use `xclaw chronos unpause JOB`" in helped.output
    listed = runner.invoke(app, ["--help"]).output
    assert "unpause" in listed and "resume" not in listed


def test_run_now_history_and_dead_letters(configured: Path) -> None:
    out = runner.invoke(app, ["run-now", "disk", "-C", str(configured)])
    assert out.exit_code == 0, out.output
    assert "chronos.fired" in out.output and "notify.failed" in out.output
    [row] = open_chronos_store().history("disk")
    assert (row.source, row.status, row.reply) == ("manual", "completed", "Alerted.")
    history = runner.invoke(app, ["history"])
    assert "disk" in history.output and "manual" in history.output
    dead = runner.invoke(app, ["dead-letters"])
    assert dead.exit_code == 0 and "down" in dead.output and "Disk" in dead.output
    assert "127.0.0.1:9" not in dead.output


def test_a_project_file_may_not_define_chronos(root: Path) -> None:
    (root / "xclaw.yaml").write_text("chronos:\n  jobs: []\n")
    with pytest.raises(ConfigError) as err:
        load_config(root)
    assert err.value.code == "CONFIG_UNSAFE"


def test_nothing_configured_is_a_clear_error(root: Path) -> None:
    out = runner.invoke(app, ["list", "-C", str(root)])
    assert out.exit_code == 2 and "CHRONOS_NOT_CONFIGURED" in out.output
