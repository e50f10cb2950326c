"""Children as durable sessions: the step tree, the session list, the store migration."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import create_engine, insert
from tests.agents.conftest import Scripts, call, deliver
from typer.testing import CliRunner

from xclaw.agents.registry import WorkerRegistry
from xclaw.agents.team import Orchestrator
from xclaw.cli.app import app
from xclaw.compose.agents import CodingAgents
from xclaw.models.scripted import ScriptedModel
from xclaw.store import schema
from xclaw.store.sqlite import SqliteStore


def _two_children(root: Path, store: SqliteStore, registry: WorkerRegistry) -> str:
    workers = Scripts(
        {
            "coder": [[call("fs.write", path="a.txt", content="A"), deliver("wrote a.txt")]],
            "reviewer": [[call("fs.read", path="a.txt"), deliver("a.txt is fine")]],
        }
    )
    model = ScriptedModel(
        [
            call("agents.delegate", worker="coder", task="Write a.txt"),
            call("agents.delegate", worker="reviewer", task="Review a.txt"),
            "done",
        ]
    )
    orch = Orchestrator(
        model, root, store=store, registry=registry, agent_factory=CodingAgents(), model_for=workers
    )
    result = asyncio.run(orch.run("Write and review a.txt"))
    assert result.status == "completed", result.reason
    return result.session_id


def test_steps_show_each_child_as_a_subtree_under_its_call(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    parent = _two_children(root, store, registry)
    coder, reviewer = store.list_children(parent)
    out = CliRunner().invoke(app, ["steps", parent], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    ledger = {e.name + str(e.arguments.get("worker")): e.step_id for e in store.load_ledger(parent)}
    coder_short = coder.id.removeprefix(parent)
    child_row = next(line for line in lines if f"└ {coder_short}" in line)
    # The child row names its worker and hangs under the delegate call's step.
    assert "coder" in child_row and ledger["agents.delegatecoder"] in child_row
    assert any(f"{coder_short}/s0001" in line for line in lines)
    assert any(f"{reviewer.id.removeprefix(parent)}/s0001" in line for line in lines)
    coder_steps = [line for line in lines if f"{coder_short}/s" in line]
    assert len(coder_steps) == len(store.list_steps(coder.id))
    assert any("deliver" in line for line in coder_steps)


def test_sessions_list_children_under_their_parent(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    parent = _two_children(root, store, registry)
    out = CliRunner().invoke(app, ["sessions"], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    # Rows of the table: "│ id │ state │ ..." (children: "│ └ id │ ...").
    cells = [line.strip("│┃ ").split("│")[0].split() for line in out.stdout.splitlines()]
    ids = [c[-1] for c in cells if c]
    children = [c.id for c in store.list_children(parent)]
    start = ids.index(parent)
    assert ids[start + 1 : start + 3] == children
    assert all(f"└ {child}" in out.stdout for child in children)
    assert f"└ {parent} " not in out.stdout


def test_a_version_1_database_gains_the_child_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        schema.migrate(conn, known={1: schema.MIGRATIONS[1]})
        conn.execute(
            insert(schema._v1_sessions).values(
                id="old",
                root="/p",
                task="t",
                model="m",
                state="success",
                phase="COMPLETED",
                created_at=1.0,
                updated_at=1.0,
                title="",
                meta="{}",
            )
        )
    engine.dispose()
    with SqliteStore(path) as store:
        old = store.get_session("old")
        assert old is not None and old.parent_session_id is None and old.caller is None
        assert store.list_children("old") == []
    with create_engine(f"sqlite:///{path}").connect() as conn:
        assert schema.current_version(conn) == schema.CURRENT_VERSION == 3
