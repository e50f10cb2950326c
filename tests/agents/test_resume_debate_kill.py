"""SIGKILL a real ``xclaw agents run`` mid-debate, then ``xclaw resume PARENT`` with no terminal.

A debate between coder and optimizer: the optimizer answers at once; the coder appends to a
journal in the project, then blocks in ``sleep``. The parent is killed during that ``sleep``.
Resuming it in a process whose stdin is not a terminal (the README's command, nothing else)
settles the coder's cut-off call the way xclaw.yaml says (``agents.on_interrupted``, default
skip): the journal is appended once, the optimizer's answer is reused, the judge hears each
worker once, and the tree completes.

With ``on_interrupted: pause`` the resume stops the whole tree with a coded reason and prints
the command that decides it; running that exact command completes the tree, once. On a
terminal the question is asked, whatever the run's approval mode.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.agents.conftest import deliver, exec_call, script_file, wait_for

from xclaw.store.base import SessionRecord
from xclaw.store.sqlite import SqliteStore, open_store


def _xclaw(*args: str) -> subprocess.CompletedProcess[str]:
    """``xclaw ARGS`` in a real process whose stdin is not a terminal."""
    return subprocess.run(
        [sys.executable, "-m", "xclaw", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
        timeout=300,
    )


def _start_debate(root: Path, scripts: Path) -> subprocess.Popen[bytes]:
    question = "Which journal format?"
    orch = script_file(
        scripts / "orch.yaml",
        [
            {
                "tool_calls": [
                    {
                        "name": "agents.debate",
                        "arguments": {"workers": ["coder", "optimizer"], "question": question},
                    }
                ]
            },
            # the conversation: after the resume its last message is the resume notice
            {"expect": {"history_contains": ["judge decided: plain text"]}, "text": "tree done"},
        ],
    )
    workers = {
        "coder": [
            exec_call("tee", "-a", "journal.txt", stdin="coder\n"),
            exec_call("sleep", "60"),
            deliver("coder says plain text"),
        ],
        "optimizer": [deliver("optimizer says jsonl")],
        "judge": [
            {
                "expect": {
                    "last_contains": ["[coder] coder says plain text", "[optimizer] optimizer says"]
                },
                **deliver("plain text"),
            }
        ],
    }
    argv = [sys.executable, "-m", "xclaw", "agents", "run", "-C", str(root)]
    argv += ["--model", orch, "--approval", "deny", "--sandbox", "bwrap"]
    for name, turns in workers.items():
        argv += ["--worker-model", f"{name}={script_file(scripts / f'{name}.yaml', turns)}"]
    return subprocess.Popen(
        [*argv, question],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )


def _kill_mid_child(root: Path, tmp_path: Path, store: SqliteStore) -> SessionRecord:
    """Run the debate and SIGKILL the parent while the coder's ``sleep`` runs (the optimizer
    has answered by then)."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    proc = _start_debate(root, scripts)
    try:

        def coder_sleeping_optimizer_done() -> bool:
            sleeping = done = False
            for parent in store.list_sessions(root=str(root)):
                for child in store.list_children(parent.id):
                    done = done or child.state == "success"
                    sleeping = sleeping or any(
                        e.arguments.get("program") == "sleep" and e.phase == "started"
                        for e in store.load_ledger(child.id)
                    )
            return sleeping and done

        wait_for(coder_sleeping_optimizer_done)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (parent,) = [s for s in store.list_sessions(root=str(root)) if s.parent_session_id is None]
    assert parent.state == "running"
    states = {c.meta["agents"]["worker"]: c.state for c in store.list_children(parent.id)}
    assert states == {"coder": "running", "optimizer": "success"}
    assert (root / "journal.txt").read_text() == "coder\n"
    return parent


def _assert_tree_done_once(store: SqliteStore, parent: SessionRecord, root: Path) -> None:
    done = store.get_session(parent.id)
    assert done is not None and done.state == "success", done
    children = store.list_children(parent.id)
    workers = sorted(c.meta["agents"]["worker"] for c in children)
    assert workers == ["coder", "judge", "optimizer"]  # no child made twice
    assert all(c.state == "success" for c in children)
    assert (root / "journal.txt").read_text() == "coder\n"  # the side effect ran once
    (coder,) = [c for c in children if c.meta["agents"]["worker"] == "coder"]
    sleeps = [e for e in store.load_ledger(coder.id) if e.arguments.get("program") == "sleep"]
    assert len(sleeps) == 1 and sleeps[0].result is not None
    assert sleeps[0].result["error_code"] == "INTERRUPTED_CALL_SKIPPED"
    (judge,) = [c for c in children if c.meta["agents"]["worker"] == "judge"]
    # Each answer reaches the judge once: the reused one is not counted twice.
    assert judge.task.count("[coder]") == 1 and judge.task.count("[optimizer]") == 1
    (debate,) = [e for e in store.load_ledger(parent.id) if e.name == "agents.debate"]
    assert debate.result is not None and debate.result["ok"], debate.result
    assert len(debate.result["data"]["answers"]) == 2


def test_resume_without_a_terminal_settles_the_child_and_completes(
    root: Path, tmp_path: Path
) -> None:
    store = open_store()
    try:
        parent = _kill_mid_child(root, tmp_path, store)
        out = _xclaw("resume", parent.id)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "tree done" in out.stdout
        _assert_tree_done_once(store, parent, root)
    finally:
        store.close()


def test_on_interrupted_pause_stops_the_tree_and_the_printed_command_completes_it(
    root: Path, tmp_path: Path
) -> None:
    (root / "xclaw.yaml").write_text("agents:\n  on_interrupted: pause\n")
    store = open_store()
    try:
        parent = _kill_mid_child(root, tmp_path, store)
        paused = _xclaw("resume", parent.id)
        assert paused.returncode == 3, paused.stdout + paused.stderr
        assert "CHILD_PAUSED" in paused.stdout
        # Nothing went on without the decision: no judge, the debate not recorded as done.
        assert {c.meta["agents"]["worker"] for c in store.list_children(parent.id)} == {
            "coder",
            "optimizer",
        }
        assert not any(e.result for e in store.load_ledger(parent.id) if e.name == "agents.debate")
        again = _xclaw("resume", parent.id)  # undecided: still paused, nothing run
        assert again.returncode == 3 and "CHILD_PAUSED" in again.stdout
        assert (root / "journal.txt").read_text() == "coder\n"
        advice = re.search(r"decide with: (xclaw resume \S+ --skip-interrupted)\n", paused.stdout)
        assert advice is not None, paused.stdout
        command = advice.group(1).split()
        assert command[:3] == ["xclaw", "resume", parent.id]
        out = _xclaw(*command[1:])
        assert out.returncode == 0, out.stdout + out.stderr
        assert "tree done" in out.stdout
        _assert_tree_done_once(store, parent, root)
    finally:
        store.close()


def _on_a_terminal(*args: str, answer: str) -> tuple[int, str]:
    """``xclaw ARGS`` with a pseudo-terminal as stdin and stdout; ``answer`` is typed at the
    first ``choice`` prompt. Returns the exit code and everything it printed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "xclaw", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "COLUMNS": "300", "TERM": "dumb"},
        close_fds=True,
    )
    os.close(slave)
    seen, answered = b"", False
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the process closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            if not answered and b"choice" in seen:
                os.write(master, answer.encode() + b"\r")
                answered = True
            if proc.poll() is not None and not ready:
                break
        assert answered, seen.decode(errors="replace")
        return proc.wait(timeout=60), seen.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_on_a_terminal_the_resume_asks_and_deny_skips_the_call(root: Path, tmp_path: Path) -> None:
    (root / "xclaw.yaml").write_text("agents:\n  on_interrupted: pause\n")  # not used: asked
    store = open_store()
    try:
        parent = _kill_mid_child(root, tmp_path, store)
        code, printed = _on_a_terminal("resume", parent.id, answer="d")
        assert code == 0, printed
        assert "Approval needed" in printed and "coder: terminal.exec" in printed
        assert "tree done" in printed
        _assert_tree_done_once(store, parent, root)
    finally:
        store.close()
