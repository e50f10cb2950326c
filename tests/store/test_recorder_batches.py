"""What one durability barrier commits (store/recorder.py): each row once, as it ends up.

A read-only call passes prepared → started → completed → result_sent before the next model
call commits them: the batch carries one ledger row per call (the one the phase-guarded upserts
would have kept) and each step once, whatever the store would hold otherwise is the same."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from xclaw import Agent, ScriptedModel
from xclaw.store.base import LEDGER_ORDER, LedgerEntry, SessionRecord, StepRecord, WriteBatch
from xclaw.store.recorder import SessionRecorder
from xclaw.store.sqlite import SqliteStore

TWO_READS = {
    "tool_calls": [
        {"name": "fs.read", "arguments": {"path": "a.txt"}},
        {"name": "fs.list", "arguments": {"path": "."}},
    ]
}


def test_a_batch_holds_each_ledger_row_and_step_once(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "a.txt").write_text("a\n")
    with SqliteStore(tmp_path / "s.db") as store:
        batches: list[WriteBatch] = []
        real = store.commit

        def commit(batch: WriteBatch) -> None:
            batches.append(batch)
            real(batch)

        monkeypatch.setattr(store, "commit", commit)
        agent = Agent(ScriptedModel([TWO_READS, "done"]), root, store=store)
        result = asyncio.run(agent.run("read a.txt and list"))
        assert result.ok
        for batch in batches:
            keys = [e.key for e in batch.ledger]
            assert len(keys) == len(set(keys))
            assert len({id(s) for s in batch.steps}) == len(batch.steps)
        ledger = store.load_ledger(result.session_id)
        assert sorted(e.name for e in ledger) == ["fs.list", "fs.read"]
        assert all(e.phase == "result_sent" and e.result is not None for e in ledger)
        steps = {s.step_id: s for s in store.list_steps(result.session_id)}
        assert sorted(s.status for s in steps.values() if s.kind == "tool_call") == [
            "completed",
            "completed",
        ]


def _recorder(store: SqliteStore) -> SessionRecorder:
    session = store.get_session("s1")
    assert session is not None
    return SessionRecorder(store, session, new=False)


def _entry(phase: Any, result: dict[str, Any] | None = None) -> LedgerEntry:
    return LedgerEntry("1:c1", 1, "c1", "fs.read", {}, True, phase, "s0001", result=result)


@pytest.mark.parametrize(
    "phases",
    [
        ["prepared", "started", "completed", "result_sent"],
        ["completed", "started"],  # a late earlier phase never undoes a later one
        ["started", "started"],
    ],
)
def test_the_row_kept_is_the_one_the_upserts_would_leave(tmp_path: Path, phases: list[Any]) -> None:
    with SqliteStore(tmp_path / "one.db") as one, SqliteStore(tmp_path / "each.db") as each:
        for store in (one, each):
            store.commit(WriteBatch("s1", create=SessionRecord("s1", "/r", "t", "m")))
            step = StepRecord("s0001", "tool_call", "fs.read", "running", 1, 0.0)
            store.commit(WriteBatch("s1", steps=[step]))
        recorder = _recorder(one)
        recorder.entries["1:c1"] = _entry(phases[0])
        for n, phase in enumerate(phases):
            recorder._ledger("1:c1", phase, result={"n": n})
            each.commit(WriteBatch("s1", ledger=[_entry(phase, {"n": n})]))  # one by one
        assert len(recorder.batch.ledger) == 1
        recorder.flush()
        (kept,) = one.load_ledger("s1")
        (applied,) = each.load_ledger("s1")
        assert (kept.phase, kept.result) == (applied.phase, applied.result)
        assert LEDGER_ORDER[kept.phase] == max(LEDGER_ORDER[p] for p in phases)
