"""The seed 000 §14.4 scenario through the CLI: `xclaw run --model chatgpt-web --base-url
<fixture> --headless`, the page answering in the XML protocol — and the same run surviving a
browser killed mid-turn without any tool running twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from fixture_server import DEMO_SCRIPT, FixtureSite
from web_support import TEST_ARGS, needs_browser

from xclaw.coding.demo.run import DEMO_TASK
from xclaw.dirs import data_dir
from xclaw.models.scripted import load_script
from xclaw.models.text.transport import ScriptedTransport, script_to_xml
from xclaw.store.sqlite import open_store

pytestmark = needs_browser


def _run(project: Path, url: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "xclaw", "run", "-C", str(project)]
    argv += ["--model", "chatgpt-web", "--base-url", url, "--headless", "--approval", "deny"]
    env = {**os.environ, "XCLAW_BROWSER_ARGS": " ".join(TEST_ARGS), "COLUMNS": "200"}
    return subprocess.Popen(
        [*argv, DEMO_TASK], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )


def _demo(site: FixtureSite) -> ScriptedTransport:
    scripted = ScriptedTransport(script_to_xml(load_script(DEMO_SCRIPT)))
    site.use_script(scripted)
    return scripted


def _check_run(project: Path, scripted: ScriptedTransport, site: FixtureSite) -> str:
    scripted.assert_complete()
    assert len(site.posted) == len(scripted.replies), "a message was posted twice"
    assert (project / "dist" / "about.html").exists()
    with open_store() as store:
        [session] = store.list_sessions(root=str(project.resolve()))
        ledger = store.load_ledger(session.id)
        assert session.meta["conversation_url"].startswith(site.url.rstrip("/") + "/c/")
    keys = [e.key for e in ledger]
    assert len(keys) == len(set(keys)) and all(e.phase == "result_sent" for e in ledger)
    return session.id


def test_the_acceptance_scenario_runs_through_the_page(site: FixtureSite, tmp_path: Path) -> None:
    scripted = _demo(site)
    project = tmp_path / "proj"
    project.mkdir()
    proc = _run(project, site.url)
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, out
    assert "chatgpt-web" in out and "sandbox: bwrap" in out
    _check_run(project, scripted, site)


def test_a_browser_killed_mid_turn_is_relaunched_and_nothing_runs_twice(
    site: FixtureSite, tmp_path: Path
) -> None:
    scripted = _demo(site)
    project = tmp_path / "proj"
    project.mkdir()
    profile = str(data_dir() / "browser" / "chatgpt")
    killed: list[int] = []

    def kill_when_busy() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(site.posted) < 5:
            time.sleep(0.05)
        time.sleep(0.3)  # the reply to message 5 is on its way
        killed.extend(_kill_browser(profile))

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    proc = _run(project, site.url)
    out, _ = proc.communicate(timeout=300)
    killer.join(timeout=5)
    assert killed, "the browser was never killed: the test proved nothing"
    assert proc.returncode == 0, out
    _check_run(project, scripted, site)


def _kill_browser(profile: str) -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if f"--user-data-dir={profile}".encode() in cmdline and b"--type=" not in cmdline:
            os.kill(int(name), signal.SIGKILL)
            pids.append(int(name))
    return pids
