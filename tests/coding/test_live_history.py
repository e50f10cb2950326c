"""An agent keeps its session's transcript between turns (coding/agent.py ``_continue``).

A follow-up turn uses what the agent committed last time instead of reading the whole
transcript again, but only while the store's counters and the session's ``created_at`` say the
store holds exactly that: anything another process records, a rollback, a failed commit makes
the next turn read the store. What the model is sent is the same either way.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xclaw import Agent, ScriptedModel
from xclaw.coding import agent as agent_module
from xclaw.coding.relative_paths import RootRewriter
from xclaw.core.messages import Message, TextPart
from xclaw.store.base import SessionRecord, TranscriptItem
from xclaw.store.recorder import LiveTranscript
from xclaw.store.sqlite import SqliteStore
from xclaw.store.transcript import TranscriptMessages, items_to_messages, message_to_items

READ = {"tool_calls": [{"name": "fs.read", "arguments": {"path": "notes.txt"}}]}
# Per user message: a read, then a reply (the script position follows the history).
SCRIPT: list[Any] = [t for n in range(12) for t in (READ, f"reply {n}")]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path / "sessions.db") as s:
        yield s


@pytest.fixture
def project(root: Path) -> Path:
    (root / "notes.txt").write_text("build: passing\n")
    return root


def _agent(project: Path, store: SqliteStore) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(SCRIPT)
    return Agent(model, project, store=store, evidence_gate_enabled=False), model


class Reads:
    """Counts full transcript reads of a store."""

    def __init__(self, store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = store.load_items

        def load_items(session_id: str) -> list[TranscriptItem]:
            self.count += 1
            return real(session_id)

        monkeypatch.setattr(store, "load_items", load_items)


def _stored(store: SqliteStore, sid: str) -> list[Message]:
    return items_to_messages(i.payload for i in SqliteStore.load_items(store, sid))


def _kept(agent: Agent, sid: str) -> list[Message]:
    return agent._transcripts[sid].messages.messages()


# -- the messages, built a batch at a time -------------------------------------------------


def _items() -> list[dict[str, Any]]:
    from xclaw.core.messages import (
        ImagePart,
        ReasoningPart,
        TextPart,
        ToolCallPart,
        ToolResult,
        ToolResultPart,
    )

    messages = [
        Message.user("first"),
        Message(
            "assistant",
            (
                ReasoningPart("thinking", provider="p", signature="sig"),
                TextPart("two calls"),
                ToolCallPart("c1", "fs.read", {"path": "a"}),
                ToolCallPart("c2", "fs.list", {"path": "."}),
            ),
        ),
        Message(
            "tool",
            (
                ToolResultPart("c1", "fs.read", ToolResult.success("a's text", lines=3)),
                ToolResultPart("c2", "fs.list", ToolResult.failure("GONE", "no such folder")),
            ),
        ),
        Message("assistant", (TextPart("one more"),)),
        Message("assistant", (ToolCallPart("c3", "fs.read", {"path": "b"}),)),
        Message("tool", (ToolResultPart("c3", "fs.read", ToolResult.success("b")),)),
        Message("user", (ImagePart("image/png", b"\x89PNG"),)),
        Message.user("second"),
        Message("assistant", (TextPart("done"),)),
    ]
    return [item for m in messages for item in message_to_items(m)]


def test_messages_built_batch_by_batch_are_those_of_the_whole_transcript() -> None:
    items = _items()
    whole = items_to_messages(items)
    assert len(whole) == 8  # consecutive assistant items and outputs joined
    for i in range(len(items) + 1):
        for j in range(i, len(items) + 1):
            built = TranscriptMessages()
            for batch in (items[:i], items[i:j], items[j:]):
                built.extend(batch)
                assert built.messages() == items_to_messages(items[: built.count])
            assert built.messages() == whole
            assert built.count == len(items)


def test_the_open_message_is_one_object_until_something_joins_it() -> None:
    items = _items()
    built = TranscriptMessages()
    built.extend(items[:3])  # the user message, then the start of the assistant's
    first, second = built.messages(), built.messages()
    assert first is not second and first == second  # a new list each time
    assert first[-1] is second[-1]
    built.extend(items[3:5])  # more of the same assistant message
    assert built.messages()[-1] is not first[-1]
    tail = built.messages()[-1]
    built.extend(items[5:7])  # the tool outputs close it: the object handed out stays
    assert built.messages()[1] is tail


def test_adopted_messages_are_the_caller_s_objects_and_mean_the_same() -> None:
    items = _items()
    own = items_to_messages(items)  # equal to what the items make, other objects
    built = TranscriptMessages()
    built.extend(items)
    assert not any(a is b for a, b in zip(built.messages(), own, strict=True))
    assert built.adopt(own) == len(own)
    assert all(a is b for a, b in zip(built.messages(), own, strict=True))
    assert built.adopt(own) == 0  # already held: nothing to compare
    # Aligned at the end, up to the first message that differs: a compacted run's messages
    changed = [Message.user("a note instead"), *own[3:]]
    again = TranscriptMessages()
    again.extend(items)
    assert again.adopt(changed) == len(own) - 3
    held = again.messages()
    assert [m is c for m, c in zip(held[3:], changed[1:], strict=True)] == [True] * (len(own) - 3)
    assert held == items_to_messages(items)
    again.extend(message_to_items(Message("assistant", (TextPart("and more"),))))
    assert again.messages() == items_to_messages(
        [*items, *message_to_items(Message("assistant", (TextPart("and more"),)))]
    )


def test_a_kept_transcript_stands_only_for_its_own_session_and_counters() -> None:
    session = SessionRecord("s1", "/r", "t", "m", created_at=100.0)
    live = LiveTranscript(session, (3, 4, 9), [])
    assert live.matches(session, (3, 4, 9))
    assert not live.matches(session, (3, 4, 10))  # an event recorded since
    assert not live.matches(session, (2, 4, 9))  # a rollback
    again = SessionRecord("s1", "/r", "t", "m", created_at=200.0)  # deleted and made again
    assert not live.matches(again, (3, 4, 9))
    assert not live.matches(SessionRecord("s2", "/r", "t", "m", created_at=100.0), (3, 4, 9))


# -- the agent ----------------------------------------------------------------------------


def test_follow_ups_use_the_kept_transcript_and_it_is_what_the_store_holds(
    project: Path, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, model = _agent(project, store)
    reads = Reads(store, monkeypatch)

    async def turns() -> str:
        first = await agent.run("read the notes")
        for n in range(3):
            result = await agent.follow_up(first.session_id, f"again {n}")
            assert result.ok and result.reply == f"reply {n + 1}"
            assert _kept(agent, first.session_id) == _stored(store, first.session_id)
        return first.session_id

    sid = asyncio.run(turns())
    assert reads.count == 0
    # the last request held the whole history, as the store has it, then the new message
    sent = model.requests[-2].messages
    assert sent[1:-1] == _stored(store, sid)[:-4]
    assert sent[-1].text.endswith("again 2")


def test_a_kept_follow_up_sends_the_model_what_a_fresh_agent_would(
    project: Path, store: SqliteStore, tmp_path: Path
) -> None:
    kept, kept_model = _agent(project, store)
    sid = asyncio.run(kept.run("read the notes")).session_id
    asyncio.run(kept.follow_up(sid, "again"))
    copy_path = tmp_path / "copy.db"
    source, target = sqlite3.connect(store.path), sqlite3.connect(copy_path)
    source.backup(target)  # the same store, for an agent that has kept nothing
    source.close()
    target.close()
    with SqliteStore(copy_path) as copy:
        fresh, fresh_model = _agent(project, copy)
        asyncio.run(fresh.follow_up(sid, "and once more"))
        asyncio.run(kept.follow_up(sid, "and once more"))
        assert kept_model.requests[-2].messages == fresh_model.requests[-2].messages
        assert kept_model.requests[-1].messages == fresh_model.requests[-1].messages
        assert _stored(store, sid) == _stored(copy, sid)


OTHER_PROCESS = """
import asyncio, sys
from pathlib import Path
from xclaw import Agent, ScriptedModel
from xclaw.store.sqlite import SqliteStore

script = [t for n in range(12) for t in ({"tool_calls": [{"name": "fs.read", "arguments":
    {"path": "notes.txt"}}]}, f"reply {n}")]
with SqliteStore(Path(sys.argv[1])) as store:
    agent = Agent(ScriptedModel(script), sys.argv[2], store=store, evidence_gate_enabled=False)
    result = asyncio.run(agent.follow_up(sys.argv[3], "from the other process"))
    print(result.reply)
"""


def test_what_another_process_records_between_turns_is_seen(
    project: Path, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, model = _agent(project, store)
    sid = asyncio.run(agent.run("read the notes")).session_id
    asyncio.run(agent.follow_up(sid, "again"))
    other = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(store.path), str(project), sid],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == "reply 2"
    reads = Reads(store, monkeypatch)
    result = asyncio.run(agent.follow_up(sid, "back here"))
    assert reads.count == 1  # the kept transcript was stale: read again
    assert result.ok and result.reply == "reply 3"
    sent = "\n".join(m.text for m in model.requests[-2].messages)
    assert "from the other process" in sent and "reply 2" in sent
    assert _kept(agent, sid) == _stored(store, sid)
    asyncio.run(agent.follow_up(sid, "and here"))
    assert reads.count == 1  # up to date again: kept


def test_a_rollback_between_turns_is_seen(
    project: Path, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, model = _agent(project, store)
    sid = asyncio.run(agent.run("read the notes")).session_id
    asyncio.run(agent.follow_up(sid, "forget this one"))
    steps = store.list_steps(sid)
    doomed = next(s for s in steps if s.kind == "user_input" and "forget" in str(s.input))
    store.rollback(sid, doomed.step_id)
    reads = Reads(store, monkeypatch)
    asyncio.run(agent.follow_up(sid, "after the rollback"))
    assert reads.count == 1
    sent = "\n".join(m.text for m in model.requests[-2].messages)
    assert "forget this one" not in sent and "after the rollback" in sent
    assert _kept(agent, sid) == _stored(store, sid)


def test_a_failed_commit_leaves_nothing_kept(
    project: Path, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, _model = _agent(project, store)
    sid = asyncio.run(agent.run("read the notes")).session_id
    real_commit = store.commit
    calls = {"n": 0}

    def failing(batch: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:  # the one before the second model call
            raise sqlite3.OperationalError("disk I/O error")
        real_commit(batch)

    monkeypatch.setattr(store, "commit", failing)
    with pytest.raises(sqlite3.OperationalError):
        asyncio.run(agent.follow_up(sid, "this turn fails"))
    assert sid not in agent._transcripts
    monkeypatch.setattr(store, "commit", real_commit)
    reads = Reads(store, monkeypatch)
    result = asyncio.run(agent.follow_up(sid, "again"))
    assert reads.count == 1 and result.ok
    assert _kept(agent, sid) == _stored(store, sid)


def test_an_agent_keeps_only_its_last_few_sessions_and_no_long_one(
    project: Path, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, _model = _agent(project, store)
    sids = []
    for n in range(agent_module.KEPT_SESSIONS + 1):
        agent.model = ScriptedModel(SCRIPT)
        sids.append(asyncio.run(agent.run(f"task {n}")).session_id)
    assert list(agent._transcripts) == sids[1:]
    monkeypatch.setattr(agent_module, "KEPT_ITEMS", 5)
    asyncio.run(agent.follow_up(sids[-1], "one more"))  # 9 items now
    assert sids[-1] not in agent._transcripts


def test_the_kept_transcript_holds_the_run_s_own_messages(
    project: Path, store: SqliteStore
) -> None:
    agent, _model = _agent(project, store)
    sid = asyncio.run(agent.run("read the notes")).session_id
    for n in range(3):
        result = asyncio.run(agent.follow_up(sid, f"turn {n}"))
        kept = _kept(agent, sid)
        assert len(kept) == len(result.messages) - 1  # all but the system message
        assert all(a is b for a, b in zip(kept, result.messages[1:], strict=True))
        assert kept == _stored(store, sid)


def test_earlier_writes_are_counted_once_not_again_every_turn(
    project: Path, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xclaw.tools.base import Workspace

    noted: list[str] = []
    real = Workspace.note_change

    def note_change(self: Workspace, rel: str) -> None:
        noted.append(rel)
        real(self, rel)

    monkeypatch.setattr(Workspace, "note_change", note_change)
    write = {"tool_calls": [{"name": "fs.write", "arguments": {"path": "log.txt", "content": "x"}}]}
    script: list[Any] = [t for n in range(8) for t in (write, f"wrote {n}")]
    agent = Agent(ScriptedModel(script), project, store=store, evidence_gate_enabled=False)
    sid = asyncio.run(agent.run("write the log")).session_id
    per_turn = []
    for n in range(4):
        before = len(noted)
        result = asyncio.run(agent.follow_up(sid, f"turn {n}"))
        per_turn.append(len(noted) - before)
        assert result.metrics.tool_calls == n + 2 and result.metrics.failed_calls == 0
        assert agent._scans[sid].written == ["log.txt"]
    # one write more each turn: the earlier ones are known by their path, not read again
    assert per_turn == [2, 2, 2, 2]  # the earlier runs' path, and this run's write


# -- the relative-paths view ----------------------------------------------------------------


def test_a_kept_message_is_rewritten_once_not_every_turn(
    project: Path, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rewritten: list[Message] = []
    real = RootRewriter.message

    def message(self: RootRewriter, msg: Message) -> Message:
        rewritten.append(msg)
        return real(self, msg)

    monkeypatch.setattr(RootRewriter, "message", message)
    agent, model = _agent(project, store)
    sid = asyncio.run(agent.run(f"read {project}/notes.txt")).session_id  # the root in it
    asyncio.run(agent.follow_up(sid, "again"))
    per_turn = []
    for n in range(3):
        before, sent_before = len(rewritten), len(model.requests)
        asyncio.run(agent.follow_up(sid, f"turn {n}"))
        per_turn.append(len(rewritten) - before)
        sent = sum(len(r.messages) for r in model.requests[sent_before:])
        assert per_turn[-1] < sent / 2
    # the history grows by four messages a turn; what is rewritten does not
    assert per_turn[0] == per_turn[1] == per_turn[2]
    assert f"{project}" not in "\n".join(m.text for m in model.requests[-1].messages)


def test_a_root_that_moved_is_hidden_in_its_new_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    (before / "proj").mkdir(parents=True)
    (before / "proj" / "notes.txt").write_text("build: passing\n")
    with SqliteStore(tmp_path / "sessions.db") as store:
        agent, model = _agent((before / "proj").resolve(), store)
        sid = asyncio.run(agent.run("read the notes")).session_id
        before.rename(after)
        before.symlink_to(after)  # the agent's workdir now resolves elsewhere
        moved = (after / "proj").resolve()
        asyncio.run(agent.follow_up(sid, f"look at {moved}/notes.txt"))
        asked = model.requests[-2].messages[-1].text
        assert str(moved) not in asked and "look at notes.txt" in asked


def test_a_transcript_round_trip_keeps_the_message_shape() -> None:
    """The kept messages are those read back from the store's JSON, not the live ones."""
    items = _items()
    assert items_to_messages(json.loads(json.dumps(items))) == items_to_messages(items)


async def test_max_turns_counts_each_message_s_run_not_the_session(
    project: Path, store: SqliteStore
) -> None:
    """A chat's later messages get the whole turn budget: 2 model turns each here, 12 in all
    (before, the session stopped answering once its history held ``max_turns`` turns)."""
    from xclaw import FunctionModel, Limits
    from xclaw.core.messages import ToolCallPart
    from xclaw.models.base import ModelTurn

    model = ScriptedModel(SCRIPT)
    agent = Agent(
        model, project, store=store, evidence_gate_enabled=False, limits=Limits(max_turns=2)
    )
    first = await agent.run("message 0")
    assert first.status == "completed", first.reason
    for n in range(1, 6):
        result = await agent.follow_up(first.session_id, f"message {n}")
        assert result.status == "completed", result.reason
        assert result.reply == f"reply {n}"

    def read_again(_messages: Any, _request: Any) -> ModelTurn:
        return ModelTurn(tool_calls=[ToolCallPart(f"c{next(ids)}", "fs.read", {"path": "a"})])

    ids = iter(range(100))
    stuck = Agent(
        FunctionModel(read_again),
        project,
        store=store,
        evidence_gate_enabled=False,
        limits=Limits(max_turns=2),
    )
    over = await stuck.follow_up(first.session_id, "one more")
    assert over.status == "interrupted" and over.reason.startswith("LIMIT_TURNS")
