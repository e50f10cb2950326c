"""The session commands as a user sees them: sessions, status, steps, export and their errors.

Runs go through the real CLI on a real store in the per-test XDG data dir; one test kills a
real ``xclaw run`` process so that ``status`` has a live process to show.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from xclaw.cli.app import app
from xclaw.store.base import SessionRecord
from xclaw.store.open import open_store

pytestmark = pytest.mark.usefixtures("backend")  # each test on SQLite and on PostgreSQL
WIDE = {"COLUMNS": "250"}  # rich tables keep whole ids and roots on a wide terminal


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=WIDE)


def script(path: Path, turns: list[dict[str, Any] | str]) -> str:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return f"scripted:{path}"


def write_turn(name: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "fs.write", "arguments": {"path": name, "content": "x"}}]}


def latest(root: Path) -> SessionRecord:
    with open_store() as store:
        return store.list_sessions(root=str(root), limit=1)[0]


def new_root(base: Path, name: str) -> Path:
    root = base / name
    root.mkdir()
    return root.resolve()


@pytest.fixture
def three_sessions(tmp_path: Path) -> dict[str, tuple[Path, SessionRecord]]:
    """success in alpha, paused (turn limit) in beta, failed (script ran out) in gamma."""
    made: dict[str, tuple[Path, SessionRecord]] = {}
    plans = {
        "alpha": ([write_turn("a.txt"), "alpha done"], [], 0),
        "beta": ([write_turn("b.txt"), write_turn("c.txt"), "beta done"], ["--max-turns", "1"], 3),
        "gamma": ([write_turn("g.txt")], [], 1),
    }
    for name, (turns, extra, code) in plans.items():
        root = new_root(tmp_path, name)
        model = script(tmp_path / f"{name}.jsonl", turns)
        task = f"{name} task: write the files"
        out = cli("run", "-C", str(root), "--approval", "deny", "--model", model, *extra, task)
        assert out.exit_code == code, out.output
        made[name] = (root, latest(root))
    return made


def test_sessions_lists_and_filters(three_sessions: dict[str, tuple[Path, SessionRecord]]) -> None:
    ids = {name: s.id for name, (_, s) in three_sessions.items()}
    states = {name: s.state for name, (_, s) in three_sessions.items()}
    assert states == {"alpha": "success", "beta": "paused", "gamma": "failed"}
    everything = cli("sessions")
    assert everything.exit_code == 0
    assert all(sid in everything.stdout for sid in ids.values())
    newest_first = [everything.stdout.index(ids[n]) for n in ("gamma", "beta", "alpha")]
    assert newest_first == sorted(newest_first)

    def only(*args: str) -> set[str]:
        out = cli("sessions", *args)
        assert out.exit_code == 0, out.output
        return {name for name, sid in ids.items() if sid in out.stdout}

    # Users see a run's words for the stored states: success is completed, paused interrupted.
    assert only("--state", "interrupted") == {"beta"}
    assert only("--state", "completed") == {"alpha"}
    assert only("--state", "failed") == {"gamma"}
    row = next(line for line in everything.stdout.splitlines() if ids["alpha"] in line)
    assert "completed" in row and "success" not in row and "COMPLETED" not in row
    assert only("-C", str(three_sessions["alpha"][0])) == {"alpha"}
    assert only("--search", "GAMMA TASK") == {"gamma"}
    assert only("--limit", "1") == {"gamma"}
    assert only("--state", "running") == set()
    assert "no sessions" in cli("sessions", "--state", "running").stdout
    for wrong in ("sleeping", "success", "paused"):  # the stored words are not the users'
        bad = cli("sessions", "--state", wrong)
        assert bad.exit_code == 2 and bad.stderr.startswith("USAGE_INVALID: ")
        assert f"'{wrong}' is not one of 'init', 'running', 'interrupted', 'completed'" in (
            " ".join(bad.stderr.split())
        )


def test_status_shows_the_current_session(
    three_sessions: dict[str, tuple[Path, SessionRecord]], tmp_path: Path
) -> None:
    root, beta = three_sessions["beta"]
    out = cli("status", "-C", str(root))
    assert out.exit_code == 0, out.output
    first = out.stdout.splitlines()[0]
    assert beta.id in first and "interrupted" in first
    assert "paused" not in first and "PAUSED" not in first
    assert "task: beta task" in out.stdout and "LIMIT_TURNS" in out.stdout
    empty = new_root(tmp_path, "empty")
    none = cli("status", "-C", str(empty))
    assert none.exit_code == 0 and "no session for" in none.stdout


def test_steps_table(three_sessions: dict[str, tuple[Path, SessionRecord]]) -> None:
    _, alpha = three_sessions["alpha"]
    out = cli("steps", alpha.id)
    assert out.exit_code == 0, out.output
    rows = [
        [cell.strip() for cell in line.strip("│ ").split("│")]
        for line in out.stdout.splitlines()
        if line.startswith("│ s0")
    ]
    assert [r[0] for r in rows] == ["s0001", "s0002", "s0003", "s0004"]
    assert [r[1] for r in rows] == ["user_input", "llm_call", "tool_call", "llm_call"]
    assert rows[2][2] == "fs.write" and rows[2][3] == "completed" and rows[2][4] == "s0002"
    assert "a.txt" in out.stdout


@pytest.mark.parametrize("fmt", ["jsonl", "codex", "claude-code"])
def test_export_to_a_file(
    three_sessions: dict[str, tuple[Path, SessionRecord]], tmp_path: Path, fmt: str
) -> None:
    _, alpha = three_sessions["alpha"]
    target = tmp_path / f"alpha.{fmt}.jsonl"
    out = cli("export", alpha.id, "--format", fmt, "-o", str(target))
    assert out.exit_code == 0, out.output
    lines = target.read_text().splitlines()
    assert f"wrote {len(lines)} lines" in out.stdout and len(lines) >= 4
    records = [json.loads(line) for line in lines]
    text = json.dumps(records)
    assert "a.txt" in text and "alpha done" in text
    assert "You are xclaw" not in text, "the system prompt must not be exported"
    to_stdout = cli("export", alpha.id, "--format", fmt)
    assert to_stdout.stdout.splitlines() == lines


def test_a_codex_export_into_a_sessions_dir_is_named_as_codex_lists_it(
    three_sessions: dict[str, tuple[Path, SessionRecord]], tmp_path: Path
) -> None:
    _, alpha = three_sessions["alpha"]
    sessions = tmp_path / "codex-home" / "sessions"
    sessions.mkdir(parents=True)
    out = cli("export", alpha.id, "--format", "codex", "-o", str(sessions))
    assert out.exit_code == 0, out.output
    (written,) = sessions.glob("*/*/*/rollout-*.jsonl")
    lines = written.read_text().splitlines()
    meta = json.loads(lines[0])
    assert meta["type"] == "session_meta"
    assert written.name.endswith(f"-{meta['payload']['id']}.jsonl")
    assert any(
        json.loads(line)["type"] == "event_msg"
        and json.loads(line)["payload"]["type"] == "user_message"
        for line in lines[1:10]
    )
    plain = cli("export", alpha.id, "--format", "jsonl", "-o", str(tmp_path))
    assert plain.exit_code == 0 and (tmp_path / f"{alpha.id}.jsonl").is_file()


def test_unknown_ids_and_steps_are_coded(
    three_sessions: dict[str, tuple[Path, SessionRecord]],
) -> None:
    _, alpha = three_sessions["alpha"]
    for args in (
        ["steps", "nope"],
        ["export", "nope"],
        ["rollback", "nope", "s0001"],
        ["fork", "nope", "s0001"],
        ["resume", "nope"],
    ):
        out = cli(*args)
        assert out.exit_code == 2, args
        assert out.stderr.startswith("SESSION_NOT_FOUND: There is no session 'nope'."), args
        assert "xclaw sessions" in out.stderr
    for args in (["rollback", alpha.id, "s0099"], ["fork", alpha.id, "nonsense"]):
        out = cli(*args)
        assert out.exit_code == 2, args
        assert out.stderr.startswith(f"STEP_NOT_FOUND: Session {alpha.id} has no step"), args
        assert f"xclaw steps {alpha.id}" in out.stderr
    bad_format = cli("export", alpha.id, "--format", "html")
    assert bad_format.exit_code == 2 and bad_format.stderr.startswith("USAGE_INVALID: ")
    assert "'html' is not one of 'codex', 'claude-code', 'jsonl'" in bad_format.stderr
    clash = cli("resume", alpha.id, "--retry-interrupted", "--skip-interrupted")
    assert clash.exit_code == 2 and "Choose one of" in clash.stderr


def _wait_for(predicate: Any, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _pids_in(root: Path) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(root):
                found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("mode", ["host", "bwrap"])
def test_status_shows_processes_left_by_a_killed_run(tmp_path: Path, mode: str) -> None:
    """On the host a killed run leaves its processes behind and status names them; in the
    sandbox they die with the run (their namespace does), so nothing is left to name."""
    root = new_root(tmp_path, "server")
    model = script(
        tmp_path / "server.jsonl",
        [
            {
                "tool_calls": [
                    {
                        "name": "process.start",
                        "arguments": {"program": "sleep", "argv": ["60"], "wait_for_url_ms": 0},
                    }
                ]
            },
            {
                "tool_calls": [
                    {"name": "terminal.exec", "arguments": {"program": "sleep", "argv": ["60"]}}
                ]
            },
            "never reached",
        ],
    )
    # Host mode asks before any program that is not read-only: allow them, knowingly.
    approval = "allow" if mode == "host" else "deny"
    argv = [sys.executable, "-m", "xclaw", "run", "-C", str(root), "--approval", approval]
    proc = subprocess.Popen(
        [*argv, "--model", model, "serve"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "XCLAW_SANDBOX": mode},
    )
    store = open_store()
    try:

        def blocked_in_exec() -> bool:
            sessions = store.list_sessions(root=str(root))
            ledger = store.load_ledger(sessions[0].id) if sessions else []
            return any(e.name == "terminal.exec" and e.phase == "started" for e in ledger)

        _wait_for(blocked_in_exec)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        session = store.list_sessions(root=str(root))[0]
        started = next(e for e in store.load_ledger(session.id) if e.name == "process.start")
        assert started.result is not None
        server_pid = started.result["data"]["pid"]
        out = cli("status", "-C", str(root))  # also stops sandboxes left by the killed run
        if mode == "bwrap":
            _wait_for(lambda: not _pids_in(root), 10)
        assert out.exit_code == 0, out.output
        assert session.id in out.stdout and "running" in out.stdout
        assert "running · executing ·" in out.stdout  # the phase, as users read it
        named = f"process proc_01 pid {server_pid}" in out.stdout
        assert named is (mode == "host")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        leftovers = _pids_in(root)  # the two sleeps the killed run left behind
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        store.close()
    # Gone means reaped (a zombie still answers kill(pid, 0)).
    _wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in leftovers), 10)
    after = cli("status", "-C", str(root))
    assert "process proc_01" not in after.stdout


def test_resume_without_an_id_takes_the_latest_unfinished_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from xclaw.cli.app import app

    project = tmp_path / "p"
    project.mkdir()
    script = tmp_path / "s.yaml"
    script.write_text("- text: done\n")
    runner = CliRunner()
    none = runner.invoke(app, ["resume", "-C", str(project)])
    assert none.exit_code == 2 and "SESSION_NOT_FOUND" in none.stderr
    first = runner.invoke(
        app,
        [
            "run",
            "-C",
            str(project),
            "--model",
            f"scripted:{script}",
            "--max-turns",
            "1",
            "say done",
        ],
    )
    assert first.exit_code == 0, first.output
    finished = runner.invoke(app, ["resume", "-C", str(project)])
    assert finished.exit_code == 2 and "SESSION_NOT_FOUND" in finished.stderr


def test_resume_without_an_id_continues_the_paused_session(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from xclaw.cli.app import app

    project = tmp_path / "q"
    project.mkdir()
    script = tmp_path / "t.yaml"
    script.write_text(
        "- tool_calls: [{name: fs.write, arguments: {path: a.txt, content: A}}]\n"
        "- text: wrote a.txt\n"
    )
    runner = CliRunner()
    first = runner.invoke(
        app,
        [
            "run",
            "-C",
            str(project),
            "--model",
            f"scripted:{script}",
            "--max-turns",
            "1",
            "write a.txt",
        ],
    )
    assert first.exit_code == 3 and "LIMIT_TURNS" in first.stdout
    again = runner.invoke(app, ["resume", "-C", str(project)])
    assert again.exit_code == 0, again.output
    assert "wrote a.txt" in again.stdout and (project / "a.txt").read_text() == "A"
