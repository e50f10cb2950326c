"""``xclaw page snapshot FILE --json --headless`` end to end: a real browser in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from page_support import CHROMIUM_ARGS, browser_path
from typer.testing import CliRunner

from xclaw.cli.app import app

FIXTURES = Path(__file__).parent / "fixtures"


def _xclaw(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "XCLAW_BROWSER": browser_path(),
        "XCLAW_BROWSER_ARGS": " ".join(CHROMIUM_ARGS),
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "xclaw", "page", "snapshot", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_snapshot_json_of_a_file() -> None:
    done = _xclaw(str(FIXTURES / "structure.html"), "--json", "--headless")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert set(out) == {"text", "refs", "stats"}
    assert set(out["stats"]) == {"nodes", "interactive", "truncated", "ms"}
    assert out["stats"]["interactive"] == len(out["refs"]) > 10
    assert all(set(r) == {"ref", "xpath", "role", "name"} for r in out["refs"])
    save = next(r for r in out["refs"] if r["name"] == "Save")
    assert save["role"] == "button" and save["ref"] in out["text"]
    assert "Far below" in out["text"]


def test_snapshot_text_viewport_only_and_a_missing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XCLAW_BROWSER", browser_path())
    monkeypatch.setenv("XCLAW_BROWSER_ARGS", " ".join(CHROMIUM_ARGS))
    target = str(FIXTURES / "structure.html")
    done = CliRunner().invoke(app, ["page", "snapshot", target, "--viewport-only", "--headless"])
    assert done.exit_code == 0, done.output
    assert '[button] "Save"' in done.stdout and "Far below" not in done.stdout
    assert "interactive" in done.stderr  # the stats line
    missing = CliRunner().invoke(app, ["page", "snapshot", str(tmp_path / "nope.html")])
    assert missing.exit_code == 2 and "PAGE_TARGET_INVALID" in missing.stderr
