"""Resume rules of seed 000 §9.2, one ledger state at a time.

Each test writes an interrupted session straight into a real store (the transcript ends with
the assistant's tool call, the ledger row is in the phase under test), then resumes it with
``Agent.resume``. Counting tools prove whether the call ran again.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pg_support import raw_rows
from xclaw import Agent, FunctionModel, Limits, ModelTurn, Risk, ScriptedModel, ToolResult, tool
from xclaw.cli.app import app
from xclaw.coding.prompt import SYSTEM_PROMPT, task_message
from xclaw.core.errors import ConfigError
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import ModelRequest
from xclaw.core.recorder import call_key
from xclaw.core.resume import RESUME_REMINDER
from xclaw.core.tooling import Answer, ApprovalRequest
from xclaw.store.base import (
    LedgerEntry,
    LedgerPhase,
    SessionRecord,
    SessionState,
    StepRecord,
    TranscriptItem,
    WriteBatch,
)
from xclaw.store.open import open_store
from xclaw.store.postgres import PostgresStore
from xclaw.store.sqlite import SqliteStore
from xclaw.store.transcript import message_to_items
from xclaw.tools.base import Tool, ToolContext

TASK = "Apply the labels."
pytestmark = pytest.mark.usefixtures("backend")  # each test on SQLite and on PostgreSQL


def counting_tools(counter: Counter[str]) -> list[Tool]:
    """Three tools that count their runs: a write, a read and one that always asks."""

    @tool("count.write", risk=Risk.WRITE)
    def count_write(ctx: ToolContext, label: str) -> ToolResult:
        """Record a label (a side effect)."""
        counter["count.write"] += 1
        return ToolResult.success(f"wrote {label}", label=label)

    @tool("count.read")
    def count_read(ctx: ToolContext, label: str) -> ToolResult:
        """Look a label up (read-only)."""
        counter["count.read"] += 1
        return ToolResult.success(f"read {label}")

    @tool("count.danger", risk=Risk.DESTRUCTIVE)
    def count_danger(ctx: ToolContext, label: str) -> ToolResult:
        """Delete a label (needs approval)."""
        counter["count.danger"] += 1
        return ToolResult.success(f"deleted {label}")

    return [count_write, count_read, count_danger]


class Recording:
    """A model that answers with a final text and keeps every request it was sent."""

    def __init__(self) -> None:
        self.requests: list[list[Message]] = []

    def __call__(self, messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        self.requests.append(list(messages))
        return ModelTurn("all labels applied")

    @property
    def first_texts(self) -> list[str]:
        return [_text(m) for m in self.requests[0]]


class AskingApprover:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return self.answer


def _text(msg: Message) -> str:
    return msg.text + "".join(p.result.to_model_text() for p in msg.tool_results)


def interrupted_session(
    store: SqliteStore | PostgresStore,
    root: Path,
    name: str,
    phase: LedgerPhase,
    *,
    read_only: bool = False,
    result: ToolResult | None = None,
    state: SessionState = "running",
) -> str:
    """A session killed while its one tool call (``name``) was in ``phase``."""
    sid = f"sess-{name}-{phase}-{time.monotonic_ns()}"
    now = time.time()
    call = ToolCallPart("call_1", name, {"label": "A"})
    task = Message.user(task_message(TASK, root))
    items = [
        TranscriptItem(1, "s0001", 0, message_to_items(task)[0], now),
        TranscriptItem(2, "s0002", 1, message_to_items(Message("assistant", (call,)))[0], now),
    ]
    steps = [
        StepRecord("s0001", "user_input", "user", "completed", 0, now, None, now),
        StepRecord("s0002", "llm_call", "function", "completed", 1, now, "s0001", now),
        StepRecord("s0003", "tool_call", name, "running", 1, now, "s0002", None),
    ]
    entry = LedgerEntry(
        call_key(1, call.call_id),
        1,
        call.call_id,
        name,
        call.arguments,
        read_only,
        phase,
        "s0003",
        "read" if read_only else "write",
        None if result is None else result.to_dict(),
        now,
    )
    session = SessionRecord(
        sid,
        str(root),
        TASK,
        "function",
        state,
        "EXECUTING",
        now,
        now,
        meta={"system_prompt": SYSTEM_PROMPT},
    )
    store.commit(WriteBatch(sid, create=session, items=items, steps=steps, ledger=[entry]))
    return sid


def agent_for(
    root: Path,
    store: SqliteStore | PostgresStore,
    counter: Counter[str],
    fn: Recording,
    approval: Any = "deny",
) -> Agent:
    model = FunctionModel(fn)
    return Agent(
        model,
        root,
        counting_tools(counter),
        store=store,
        approval=approval,
        evidence_gate_enabled=False,
    )


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[SqliteStore | PostgresStore]:
    with open_store(None if backend == "postgres" else tmp_path / "db" / "xclaw.db") as s:
        yield s


async def test_completed_not_sent_sends_the_saved_result(
    root: Path, store: SqliteStore | PostgresStore
) -> None:
    saved = ToolResult.success("wrote A (saved before the crash)", label="A")
    sid = interrupted_session(store, root, "count.write", "completed", result=saved)
    counter: Counter[str] = Counter()
    model = Recording()
    result = await agent_for(root, store, counter, model).resume(sid)
    assert result.status == "completed", result.reason
    assert counter["count.write"] == 0, "the completed call ran again"
    assert "wrote A (saved before the crash)" in "\n".join(model.first_texts)
    (entry,) = store.load_ledger(sid)
    assert entry.phase == "result_sent" and entry.result == saved.to_dict()


@pytest.mark.parametrize("answer", ["once", "deny"])
async def test_prepared_only_asks_again(
    root: Path, store: SqliteStore | PostgresStore, answer: Answer
) -> None:
    sid = interrupted_session(store, root, "count.danger", "prepared")
    counter: Counter[str] = Counter()
    approver = AskingApprover(answer)
    model = Recording()
    result = await agent_for(root, store, counter, model, approver).resume(sid)
    assert result.status == "completed", result.reason
    assert [a.tool for a in approver.asked] == ["count.danger"]
    assert counter["count.danger"] == (1 if answer == "once" else 0)
    sent = "\n".join(model.first_texts)
    assert ("deleted A" in sent) == (answer == "once")
    assert ("APPROVAL_DENIED" in sent) == (answer == "deny")


async def test_started_read_only_runs_again(root: Path, store: SqliteStore | PostgresStore) -> None:
    sid = interrupted_session(store, root, "count.read", "started", read_only=True)
    counter: Counter[str] = Counter()
    model = Recording()
    result = await agent_for(root, store, counter, model).resume(sid)
    assert result.status == "completed", result.reason
    assert counter["count.read"] == 1
    assert "read A" in "\n".join(model.first_texts)


async def test_started_write_pauses_without_a_decision(
    root: Path, store: SqliteStore | PostgresStore
) -> None:
    sid = interrupted_session(store, root, "count.write", "started")
    counter: Counter[str] = Counter()
    model = Recording()
    result = await agent_for(root, store, counter, model).resume(sid)
    assert result.status == "interrupted" and result.reason.startswith("SESSION_PAUSED")
    assert counter["count.write"] == 0 and model.requests == []
    session = store.get_session(sid)
    assert session is not None and session.state == "paused" and session.phase == "PAUSED"
    assert session.pending is not None
    assert session.pending["call_id"] == "call_1" and session.pending["name"] == "count.write"
    (entry,) = store.load_ledger(sid)
    assert entry.phase == "started"
    # Asking again without a decision pauses again and still runs nothing.
    again = await agent_for(root, store, counter, model).resume(sid)
    assert again.status == "interrupted" and counter["count.write"] == 0


async def test_fresh_context_still_settles_interrupted_calls(
    root: Path, store: SqliteStore | PostgresStore
) -> None:
    sid = interrupted_session(store, root, "count.write", "started")
    counter: Counter[str] = Counter()
    model = Recording()
    agent = agent_for(root, store, counter, model)
    paused = await agent.resume(sid, fresh_context=True)
    assert paused.status == "interrupted" and paused.reason.startswith("SESSION_PAUSED")
    assert counter["count.write"] == 0 and model.requests == []
    done = await agent.resume(sid, fresh_context=True, interrupted="retry")
    assert counter["count.write"] == 1
    assert done.status == "completed" and len(model.requests) == 1


@pytest.mark.parametrize(
    ("choice", "answer", "runs"),
    [("retry", "deny", 1), ("skip", "once", 0), ("ask", "once", 1), ("ask", "deny", 0)],
)
async def test_started_write_decided(
    root: Path, store: SqliteStore | PostgresStore, choice: Any, answer: Answer, runs: int
) -> None:
    sid = interrupted_session(store, root, "count.write", "started")
    counter: Counter[str] = Counter()
    await agent_for(root, store, counter, Recording()).resume(sid)  # pauses
    approver = AskingApprover(answer)
    model = Recording()
    agent = agent_for(root, store, counter, model, approver)
    result = await agent.resume(sid, interrupted=choice)
    assert result.status == "completed", result.reason
    assert counter["count.write"] == runs
    asked = [a.decision.code for a in approver.asked]
    assert asked == (["INTERRUPTED_CALL"] if choice == "ask" else [])
    sent = "\n".join(model.first_texts)
    assert ("INTERRUPTED_CALL_SKIPPED" in sent) == (runs == 0)
    assert ("wrote A" in sent) == (runs == 1)
    session = store.get_session(sid)
    assert session is not None and session.state == "success" and session.pending is None
    (entry,) = store.load_ledger(sid)
    assert entry.phase == "result_sent"


async def test_resume_reminder_is_sent_and_recorded(
    root: Path, store: SqliteStore | PostgresStore
) -> None:
    saved = ToolResult.success("wrote A")
    sid = interrupted_session(store, root, "count.write", "completed", result=saved)
    model = Recording()
    await agent_for(root, store, Counter(), model).resume(sid)
    assert model.first_texts[-1] == RESUME_REMINDER
    texts = [
        c["text"]
        for i in store.load_items(sid)
        if i.payload["type"] == "message"
        for c in i.payload["content"]
    ]
    assert texts.count(RESUME_REMINDER) == 1
    alerts = [s for s in store.list_steps(sid) if s.kind == "system_alert"]
    assert len(alerts) == 1 and alerts[0].input == {"text": RESUME_REMINDER}


async def test_finished_session_is_not_resumed(
    root: Path, store: SqliteStore | PostgresStore
) -> None:
    model = Recording()
    agent = agent_for(root, store, Counter(), model)
    done = await agent.run(TASK)
    assert done.status == "completed"
    with pytest.raises(ConfigError) as err:
        await agent.resume(done.session_id)
    assert err.value.code == "SESSION_FINISHED"
    assert len(model.requests) == 1


def test_cli_refuses_to_resume_a_finished_session(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("- text: nothing to do\n")
    ran = CliRunner().invoke(
        app, ["run", "-C", str(root), "--approval", "deny", "--model", f"scripted:{script}", "x"]
    )
    assert ran.exit_code == 0, ran.output
    with open_store() as default:
        (session,) = default.list_sessions(root=str(root))
    again = CliRunner().invoke(app, ["resume", session.id])
    assert again.exit_code == 2
    assert "SESSION_FINISHED" in again.stderr and "xclaw fork" in again.stderr


async def test_paused_session_with_pending_approval_asks_again(
    root: Path, store: SqliteStore | PostgresStore
) -> None:
    sid = interrupted_session(store, root, "count.danger", "prepared", state="paused")
    counter: Counter[str] = Counter()
    approver = AskingApprover("once")
    result = await agent_for(root, store, counter, Recording(), approver).resume(sid)
    assert result.status == "completed", result.reason
    assert len(approver.asked) == 1 and approver.asked[0].decision.code == "TOOL_NEEDS_APPROVAL"
    assert counter["count.danger"] == 1
    (entry,) = store.load_ledger(sid)
    assert entry.phase == "result_sent"


def _write_turns(n: int) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "fs.write", "arguments": {"path": f"f{i}.txt", "content": "x"}}]}
        for i in range(n)
    ]


def _checkpoint_turns(store: SqliteStore | PostgresStore | PostgresStore, sid: str) -> list[int]:
    rows = raw_rows(store, "SELECT turn FROM checkpoints WHERE session_id = ? ORDER BY turn", sid)
    return [r[0] for r in rows]


async def test_checkpoints_every_n_turns_and_fresh_context(
    root: Path, store: SqliteStore | PostgresStore
) -> None:
    model = ScriptedModel([*_write_turns(5), "written"])
    agent = Agent(model, root, store=store, checkpoint_every=2, limits=Limits(max_turns=5))
    stopped = await agent.run("write five files")
    assert stopped.status == "interrupted" and stopped.reason.startswith("LIMIT_TURNS")
    assert _checkpoint_turns(store, stopped.session_id) == [2, 4]
    cp = store.latest_checkpoint(stopped.session_id)
    assert cp is not None and cp.modified_files == [f"f{i}.txt" for i in range(4)]

    fresh = Recording()
    resumed = Agent(FunctionModel(fresh), root, store=store, evidence_gate_enabled=False)
    result = await resumed.resume(stopped.session_id, fresh_context=True)
    assert result.status == "completed", result.reason
    first = fresh.requests[0]
    assert [m.role for m in first] == ["system", "user", "user"]
    assert "Task:\nwrite five files" in first[1].text
    summary = first[2].text
    assert "Checkpoint at turn 4" in summary and "f3.txt" in summary
    assert summary.endswith(RESUME_REMINDER)
    assert not any(m.tool_calls or m.tool_results for m in first), "old history leaked in"


def _label_turns(labels: str) -> list[dict[str, Any] | str]:
    turns: list[dict[str, Any] | str] = [
        {"tool_calls": [{"id": f"c{c}", "name": "count.write", "arguments": {"label": c}}]}
        for c in labels
    ]
    return [*turns, "labels applied"]


@pytest.mark.parametrize("fresh", [False, True])
async def test_scripted_model_continues_where_it_stopped(
    root: Path, store: SqliteStore | PostgresStore, fresh: bool
) -> None:
    counter: Counter[str] = Counter()
    tools = counting_tools(counter)
    first = Agent(
        ScriptedModel(_label_turns("ABCD")),
        root,
        tools,
        store=store,
        limits=Limits(max_turns=2),
        checkpoint_every=1,
    )
    stopped = await first.run(TASK)
    assert stopped.status == "interrupted" and counter["count.write"] == 2
    # A new process loads the same script: the recorded turns are not played again.
    model = ScriptedModel(_label_turns("ABCD"))
    second = Agent(model, root, tools, store=store, evidence_gate_enabled=False)
    result = await second.resume(stopped.session_id, fresh_context=fresh)
    assert result.status == "completed", result.reason
    assert counter["count.write"] == 4
    model.assert_complete()
    calls = [
        json.loads(i.payload["arguments"])["label"]
        for i in store.load_items(stopped.session_id)
        if i.payload["type"] == "function_call"
    ]
    assert calls == ["A", "B", "C", "D"]


async def test_unknown_session_is_coded(root: Path, store: SqliteStore | PostgresStore) -> None:
    agent = agent_for(root, store, Counter(), Recording())
    with pytest.raises(ConfigError) as err:
        await agent.resume("no-such-session")
    assert err.value.code == "SESSION_NOT_FOUND"


async def test_checkpoints_count_on_across_follow_ups(
    root: Path, store: SqliteStore | PostgresStore
) -> None:
    """A chat of short turns: each message is a write and a reply (two model turns); with
    ``checkpoint_every=4`` a checkpoint lands every fourth turn of the session, also when a
    new agent (another process) takes the session over, not one per message."""
    script: list[dict[str, Any] | str] = []
    for turn in _write_turns(6):
        script += [turn, "written"]
    model = ScriptedModel(script)
    agent = Agent(model, root, store=store, checkpoint_every=4, evidence_gate_enabled=False)
    first = await agent.run("write a file")
    sid = first.session_id
    for _ in range(2):
        assert (await agent.follow_up(sid, "one more")).status == "completed"
    assert _checkpoint_turns(store, sid) == [5]  # turns 1, 3, 5: tools ran; 5 - 0 >= 4
    taken_over = Agent(model, root, store=store, checkpoint_every=4, evidence_gate_enabled=False)
    for _ in range(3):
        assert (await taken_over.follow_up(sid, "one more")).status == "completed"
    assert _checkpoint_turns(store, sid) == [5, 9]  # 7 - 5 < 4, 9 - 5 >= 4, 11 - 9 < 4
