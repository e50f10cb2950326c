"""A run's end event (``run.completed``/``interrupted``/``failed``) lands in the store, in the
same commit as the outcome it reports, and it is shown to subscribers only after that commit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from xclaw import Agent, Limits, ScriptedModel
from xclaw.core.events import Event, EventBus
from xclaw.store.sqlite import SqliteStore


def test_the_end_of_a_run_is_recorded_with_its_outcome(root: Path, tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "s.db") as store:
        bus = EventBus()
        seen: list[tuple[str, str | None]] = []

        def watch(ev: Event) -> None:
            if ev.type.startswith("run."):  # what the store holds when the view is told
                record = store.get_session(ev.session_id)
                seen.append((ev.type, record.state if record else None))

        bus.subscribe(watch)
        agent = Agent(ScriptedModel(["done"]), root, store=store, bus=bus)
        result = asyncio.run(agent.run("say done"))
        events = store.list_events(result.session_id)
        assert [e.type for e in events][-1] == "run.completed"
        assert events[-1].payload["reply"] == "done"
        assert events[-1].payload["metrics"]["rounds"] == 1
        assert [e.type for e in events].count("run.completed") == 1  # not twice via the bus
        assert seen[-1] == ("run.completed", "success")


def test_an_interrupted_run_records_why(root: Path, tmp_path: Path) -> None:
    call = {"tool_calls": [{"name": "fs.list", "arguments": {"path": "."}}]}
    with SqliteStore(tmp_path / "s.db") as store:
        agent = Agent(ScriptedModel([call, call]), root, store=store, limits=Limits(max_turns=1))
        result = asyncio.run(agent.run("list forever"))
        assert result.status == "interrupted"
        (end,) = [e for e in store.list_events(result.session_id) if e.type.startswith("run.")][1:]
        assert end.type == "run.interrupted" and "LIMIT_TURNS" in end.payload["reason"]


@pytest.mark.parametrize("fails_at", [1, 2])
def test_a_commit_that_fails_leaves_no_end_event_shown(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails_at: int
) -> None:
    """The end is shown only once recorded: a failed last commit shows nothing."""
    with SqliteStore(tmp_path / "s.db") as store:
        bus = EventBus()
        ends: list[str] = []
        bus.subscribe(lambda ev: ends.append(ev.type) if ev.type.startswith("run.") else None)
        real = store.commit
        calls = {"n": 0}

        def commit(batch: object) -> None:
            calls["n"] += 1
            if calls["n"] == fails_at:  # 1: the task (with the session), 2: the outcome
                raise OSError("disk full")
            real(batch)  # type: ignore[arg-type]

        monkeypatch.setattr(store, "commit", commit)
        agent = Agent(ScriptedModel(["done"]), root, store=store, bus=bus)
        with pytest.raises(OSError):
            asyncio.run(agent.run("say done"))
        assert "run.completed" not in ends
