"""Delegate end to end: a coder writes, a reviewer finds the bug, the coder fixes it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.agents.conftest import Scripts, call, deliver, tree

from xclaw.agents.registry import WorkerRegistry
from xclaw.agents.team import Orchestrator
from xclaw.compose.agents import CodingAgents
from xclaw.models.scripted import ScriptedModel
from xclaw.store.sqlite import SqliteStore


def test_coder_writes_reviewer_finds_bug_coder_fixes(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    workers = Scripts(
        {
            "coder": [
                [
                    call("fs.write", path="calc.py", content="def add(a, b):\n    return a - b\n"),
                    deliver("wrote calc.py with add()", {"files": ["calc.py"]}, source="calc.py"),
                ],
                [
                    call("fs.read", path="calc.py"),
                    call("fs.edit", path="calc.py", old_text="a - b", new_text="a + b"),
                    deliver("fixed add() to return a + b", {"fixed": True}),
                ],
            ],
            "reviewer": [
                [
                    call("fs.read", path="calc.py"),
                    deliver(
                        "add() subtracts instead of adding",
                        {"issues": [{"file": "calc.py", "line": 2, "fix": "return a + b"}]},
                    ),
                ]
            ],
        }
    )
    orchestrator_model = ScriptedModel(
        [
            call("agents.delegate", worker="coder", task="Write calc.py with add(a, b)."),
            {
                "expect": {"last_contains": ["coder delivered: wrote calc.py"]},
                **call("agents.delegate", worker="reviewer", task="Review calc.py for bugs."),
            },
            {
                "expect": {"last_contains": ["add() subtracts"]},
                **call("agents.delegate", worker="coder", task="Fix calc.py: add returns a + b."),
            },
            {"expect": {"last_contains": ["fixed add()"]}, "text": "written, reviewed, fixed."},
        ]
    )
    orch = tree(
        orchestrator_model,
        root,
        store,
        registry,
        model_for=workers,
    )
    result = asyncio.run(orch.run("Write an add function, get it reviewed and fixed."))

    assert result.status == "completed", result.reason
    assert (root / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    workers.assert_all_used()
    orchestrator_model.assert_complete()

    # The parent's context holds deliveries only: no child transcript, no file bodies.
    results = [r.result for r in result.tool_calls]
    assert [r.ok for r in results] == [True, True, True]
    first = results[0].data
    assert first["summary_data"] == {"files": ["calc.py"]}
    assert first["artifact_pointers"] == {"source": str(root / "calc.py")}
    assert results[1].data["summary_data"]["issues"][0]["line"] == 2
    parent_text = "\n".join(r.to_model_text() for r in results)
    assert "return a - b" not in parent_text and "fs.read" not in parent_text

    # Three durable children, linked to the parent, each with its own steps.
    children = store.list_children(result.session_id)
    assert [c.meta["agents"]["worker"] for c in children] == ["coder", "reviewer", "coder"]
    assert all(c.caller == "agent" and c.state == "success" for c in children)
    assert [c.id for c in children] == [r.data["session_id"] for r in results]
    assert store.get_session(result.session_id).caller == "user"  # type: ignore[union-attr]
    assert any(s.name == "deliver" for s in store.list_steps(children[0].id))
    events = [e.type for e in store.list_events(result.session_id)]
    assert events.count("agents.child_started") == 3
    assert events.count("agents.child_finished") == 3


def test_deliver_checks_its_pointers_and_size(
    root: Path, tmp_path: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    (root / "report.md").write_text("# report\n")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x")
    workers = Scripts(
        {
            "reviewer": [
                [
                    deliver("bad pointer", leak=str(outside)),
                    {
                        "expect": {"last_ok": False, "last_contains": ["PATH_OUTSIDE_ROOT"]},
                        **deliver("too big", {"blob": "x" * 9_000}),
                    },
                    {
                        "expect": {"last_ok": False, "last_contains": ["summary_data is"]},
                        **deliver("missing", gone="nope.md"),
                    },
                    {
                        "expect": {"last_ok": False},
                        **deliver("ok", {"n": 1}, report="report.md", run="session:abc-1"),
                    },
                ],
                ["I only answer in text."],
            ]
        }
    )
    model = ScriptedModel(
        [
            call("agents.delegate", worker="reviewer", task="Report."),
            call("agents.delegate", worker="reviewer", task="Answer."),
            "done",
        ]
    )
    orch = Orchestrator(
        model, root, store=store, registry=registry, agent_factory=CodingAgents(), model_for=workers
    )
    result = asyncio.run(orch.run("Two reports."))
    assert result.status == "completed", result.reason
    workers.assert_all_used()
    first, second = (r.result.data for r in result.tool_calls)
    assert first["artifact_pointers"] == {
        "report": str(root / "report.md"),
        "run": "session:abc-1",
    }
    assert first["delivered"] is True
    assert second["summary"] == "I only answer in text." and second["delivered"] is False


def test_a_worker_can_deliver_an_error(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    error = call(
        "deliver",
        summary="calc.py does not exist",
        summary_data={"missing": ["calc.py"]},
        status="error",
    )
    workers = Scripts({"reviewer": [[error]]})
    model = ScriptedModel(
        [
            call("agents.delegate", worker="reviewer", task="Review calc.py"),
            {"expect": {"last_ok": False, "last_contains": ["CHILD_REPORTED_ERROR"]}, "text": "x"},
        ]
    )
    orch = Orchestrator(
        model, root, store=store, registry=registry, agent_factory=CodingAgents(), model_for=workers
    )
    result = asyncio.run(orch.run("Review calc.py"))
    failure = result.tool_calls[0].result
    assert failure.error_code == "CHILD_REPORTED_ERROR"
    assert failure.data["status"] == "error" and failure.data["run_status"] == "completed"
    assert failure.data["summary_data"] == {"missing": ["calc.py"]}
