"""Step ids, rollback and fork through the CLI, on a real store in the XDG data dir.

Step ids (s0001…) are stable: a resumed session numbers on from its last step. Rollback
rewinds the transcript (never the world) and lists the side effects it cannot undo; fork copies
a history into a new session and leaves the original's rows byte for byte as they were.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from pg_support import raw_rows
from xclaw.cli.app import app
from xclaw.store.base import SessionRecord, StepRecord
from xclaw.store.open import open_store

TASK = "Record the notes."
TABLES = ("items", "steps", "ledger", "events", "checkpoints")
pytestmark = pytest.mark.usefixtures("backend")  # each test on SQLite and on PostgreSQL


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def write_script(path: Path, turns: list[dict[str, Any] | str]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


def notes_script(path: Path) -> Path:
    """write a.txt, append to the journal, write b.txt, read a.txt, finish."""
    return write_script(
        path,
        [
            {"tool_calls": [{"name": "fs.write", "arguments": {"path": "a.txt", "content": "A"}}]},
            {
                "tool_calls": [
                    {
                        "name": "terminal.exec",
                        "arguments": {
                            "program": "tee",
                            "argv": ["-a", "journal.txt"],
                            "stdin": "entry\n",
                        },
                    }
                ]
            },
            {"tool_calls": [{"name": "fs.write", "arguments": {"path": "b.txt", "content": "B"}}]},
            {"tool_calls": [{"name": "fs.read", "arguments": {"path": "a.txt"}}]},
            "notes recorded",
        ],
    )


def run(root: Path, script: Path, *extra: str) -> tuple[Result, SessionRecord]:
    result = cli(
        "run", "-C", str(root), "--approval", "deny", "--model", f"scripted:{script}", *extra, TASK
    )
    with open_store() as store:
        session = store.list_sessions(root=str(root), limit=1)[0]
    return result, session


def steps_of(sid: str) -> list[StepRecord]:
    with open_store() as store:
        return store.list_steps(sid)


def step_ids_printed(sid: str) -> list[str]:
    out = cli("steps", sid)
    assert out.exit_code == 0, out.output
    return re.findall(r"^\S*\s*(s\d{4})\b", out.stdout, flags=re.MULTILINE)


def llm_step(sid: str, turn: int) -> str:
    return next(s.step_id for s in steps_of(sid) if s.kind == "llm_call" and s.turn == turn)


def dump_session(sid: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of one session, straight from the database with the plain driver."""
    with open_store() as store:
        out = {"sessions": raw_rows(store, "SELECT * FROM sessions WHERE id = ?", sid)}
        for table in TABLES:
            rows = raw_rows(store, f"SELECT * FROM {table} WHERE session_id = ?", sid)
            out[table] = sorted(rows, key=repr)
    return out


def test_step_ids_continue_across_a_resume(root: Path, tmp_path: Path) -> None:
    script = notes_script(tmp_path / "notes.jsonl")
    stopped, session = run(root, script, "--max-turns", "3")
    assert stopped.exit_code == 3, stopped.output
    before = steps_of(session.id)
    assert [s.step_id for s in before] == [f"s{n:04d}" for n in range(1, len(before) + 1)]
    assert step_ids_printed(session.id) == [s.step_id for s in before]

    resumed = cli("resume", session.id, "--approval", "deny")
    assert resumed.exit_code == 0, resumed.output
    after = steps_of(session.id)
    assert [(s.step_id, s.kind, s.name) for s in after[: len(before)]] == [
        (s.step_id, s.kind, s.name) for s in before
    ]
    new = after[len(before) :]
    first = len(before) + 1
    assert [s.step_id for s in new] == [f"s{n:04d}" for n in range(first, first + len(new))]
    assert new[0].kind == "system_alert"  # the resume reminder opens the continuation
    assert step_ids_printed(session.id) == [s.step_id for s in after]
    assert (root / "journal.txt").read_text() == "entry\n"


def test_rollback_lists_irreversible_effects_and_resume_continues(
    root: Path, tmp_path: Path
) -> None:
    script = notes_script(tmp_path / "notes.jsonl")
    done, session = run(root, script)
    assert done.exit_code == 0, done.output
    target = llm_step(session.id, 2)  # the turn that appended to the journal
    total = len(steps_of(session.id))

    out = cli("rollback", session.id, target)
    assert out.exit_code == 0, out.output
    text = " ".join(out.stdout.split())
    removed = total - int(target[1:]) + 1
    assert f"removed {removed} steps" in text
    assert "were not undone" in text
    assert "terminal.exec" in text and "journal.txt" in text and "b.txt" in text
    assert "fs.read" not in text and 'a.txt"' not in text.split("not undone", 1)[1]
    assert (root / "b.txt").read_text() == "B" and (root / "journal.txt").exists()

    with open_store() as store:
        rewound = store.get_session(session.id)
        assert rewound is not None and rewound.state == "paused"
        assert [s.step_id for s in store.list_steps(session.id)][
            -1
        ] == f"s{int(target[1:]) - 1:04d}"
        items = store.load_items(session.id)
        assert items[-1].payload["type"] == "function_call_output"

    resumed = cli("resume", session.id, "--approval", "deny")
    assert resumed.exit_code == 0, resumed.output
    # The world was not rewound: the journal append ran again when the script replayed it.
    assert (root / "journal.txt").read_text() == "entry\nentry\n"
    numbers = [int(s.step_id[1:]) for s in steps_of(session.id)]
    kept = int(target[1:]) - 1
    # Kept steps are untouched; new ones continue after every id ever used (never reused).
    assert numbers[:kept] == list(range(1, kept + 1))
    assert numbers[kept:] == list(range(total + 1, total + 1 + len(numbers) - kept))
    with open_store() as store:
        finished = store.get_session(session.id)
        assert finished is not None and finished.state == "success"


def test_fork_copies_history_and_leaves_the_original_untouched(root: Path, tmp_path: Path) -> None:
    script = notes_script(tmp_path / "notes.jsonl")
    done, original = run(root, script)
    assert done.exit_code == 0, done.output
    at = llm_step(original.id, 3)
    rows_before = dump_session(original.id)

    out = cli("fork", original.id, at)
    assert out.exit_code == 0, out.output
    with open_store() as store:
        (fork,) = [s for s in store.list_sessions(root=str(root)) if s.id != original.id]
        assert fork.parent_id == original.id and fork.fork_step == at
        assert fork.id in out.stdout
        copied = store.load_items(fork.id)
        assert copied[-1].payload["type"] == "function_call"
        assert [s.step_id for s in store.list_steps(fork.id)][-1] == at
    assert dump_session(original.id) == rows_before

    resumed = cli("resume", fork.id, "--approval", "deny")
    assert resumed.exit_code == 0, resumed.output
    assert dump_session(original.id) == rows_before, "resuming the fork changed the original"
    with open_store() as store:
        forked = store.get_session(fork.id)
        assert forked is not None and forked.state == "success"
        assert forked.parent_id == original.id
    # The fork ran the call it copied unanswered (write b.txt) and the rest of the script.
    assert (root / "journal.txt").read_text() == "entry\n"
    refused = cli("resume", original.id, "--approval", "deny")
    assert refused.exit_code == 2 and "SESSION_FINISHED" in refused.stderr
