"""SIGKILL a real ``xclaw agents run`` process while a child works, then ``xclaw resume`` it.

A three-step pipeline: coder (appends "one" to a journal), optimizer (appends "two" in its
isolated workspace, then blocks in ``sleep``), reviewer. The parent process is killed while
the optimizer's ``sleep`` runs. Resuming the parent must reuse the finished coder child (not
run it again), resume the optimizer child where it stopped (its append not repeated), run the
reviewer, and finish the orchestrator.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.agents.conftest import deliver, exec_call, script_file, wait_for
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.store.sqlite import open_store


def test_resume_after_sigkill_of_the_parent_mid_child(root: Path, tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    orch = script_file(
        scripts / "orch.yaml",
        [
            {
                "tool_calls": [
                    {
                        "name": "agents.pipeline",
                        "arguments": {
                            "steps": [
                                {"worker": "coder", "task": "Journal one."},
                                {"worker": "optimizer", "task": "After {{input}}: journal two."},
                                {"worker": "reviewer", "task": "Review: {{input}}"},
                            ]
                        },
                    }
                ]
            },
            # the conversation: after the resume its last message is the resume notice
            {"expect": {"history_contains": ["reviewed"]}, "text": "all three steps done"},
        ],
    )
    workers = {
        "coder": [exec_call("tee", "-a", "journal.txt", stdin="one\n"), deliver("one journaled")],
        "optimizer": [
            exec_call("tee", "-a", "journal.txt", stdin="two\n"),
            exec_call("sleep", "30"),
            deliver("two journaled"),
        ],
        "reviewer": [
            {"expect": {"last_contains": ["Review: two journaled"]}, **deliver("reviewed")}
        ],
    }
    argv = [sys.executable, "-m", "xclaw", "agents", "run", "-C", str(root)]
    argv += ["--model", orch, "--approval", "deny", "--sandbox", "bwrap"]
    for name, turns in workers.items():
        argv += ["--worker-model", f"{name}={script_file(scripts / f'{name}.yaml', turns)}"]
    proc = subprocess.Popen(
        [*argv, "Journal one and two, then review."],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    store = open_store()
    try:

        def optimizer_sleeping() -> bool:
            for parent in store.list_sessions(root=str(root)):
                for child in store.list_children(parent.id):
                    ledger = store.load_ledger(child.id)
                    if any(
                        e.name == "terminal.exec"
                        and e.arguments.get("program") == "sleep"
                        and e.phase == "started"
                        for e in ledger
                    ):
                        return True
            return False

        wait_for(optimizer_sleeping)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    (parent,) = [s for s in store.list_sessions(root=str(root)) if s.parent_session_id is None]
    assert parent.state == "running" and parent.caller == "user"
    # The pipeline call was on record before its children started (read-only for the
    # parent's files, but it starts work): a resume continues it, whatever the model says.
    (pipeline,) = store.load_ledger(parent.id)
    assert (pipeline.name, pipeline.phase) == ("agents.pipeline", "started")
    coder, optimizer = store.list_children(parent.id)
    assert (coder.state, optimizer.state) == ("success", "running")
    coder_steps = len(store.list_steps(coder.id))
    assert (root / "journal.txt").read_text() == "one\n"

    out = CliRunner().invoke(app, ["resume", parent.id, "--skip-interrupted"])
    assert out.exit_code == 0, out.output

    done = store.get_session(parent.id)
    assert done is not None and done.state == "success"
    children = store.list_children(parent.id)
    assert [c.meta["agents"]["worker"] for c in children] == ["coder", "optimizer", "reviewer"]
    assert all(c.state == "success" for c in children)
    # The finished child was not run again; the interrupted one continued, effects once each.
    assert len(store.list_steps(coder.id)) == coder_steps
    assert (root / "journal.txt").read_text() == "one\n"
    tree = Path(optimizer.root)
    assert (tree / "journal.txt").read_text() == "one\ntwo\n"  # a copy made after step 1
    skipped = [e for e in store.load_ledger(optimizer.id) if e.arguments.get("program") == "sleep"]
    assert skipped[0].result is not None
    assert skipped[0].result["error_code"] == "INTERRUPTED_CALL_SKIPPED"
    # What the resumed process started (the killed one's events were not flushed yet).
    started = [e for e in store.list_events(parent.id) if e.type == "agents.child_started"]
    assert [(e.payload["worker"], e.payload["resumed"]) for e in started][-2:] == [
        ("optimizer", True),
        ("reviewer", False),
    ]
    assert not any(e.payload["worker"] == "coder" and e.payload["resumed"] for e in started)
    store.close()
