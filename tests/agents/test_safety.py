"""Safety and cost: approvals only narrow, cancellation of the whole tree, the concurrency
limit, the shared budget, and failed or timed-out children as structured results."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from tests.agents.conftest import Scripts, call, deliver, tree

from xclaw.agents.config import AgentsConfig, BudgetConfig, WorkerConfig
from xclaw.agents.registry import WorkerRegistry, WorkerSpec, build_registry
from xclaw.agents.team import TeamSettings
from xclaw.coding.toolset import coding_registry
from xclaw.core.errors import ConfigError, ModelRequestRejected
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import Model, ModelRequest
from xclaw.core.state import RunControl
from xclaw.core.tooling import Answer, ApprovalRequest
from xclaw.models.base import ModelTurn
from xclaw.models.scripted import FunctionModel, ScriptedModel
from xclaw.store.sqlite import SqliteStore

TOOLS = [t.name for t in coding_registry()]


class Recording:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return self.answer


def test_a_worker_may_not_widen_the_parents_approval() -> None:
    cfg = AgentsConfig(workers={"coder": WorkerConfig(approval="allow")})
    with pytest.raises(ConfigError) as err:
        build_registry(cfg, known_tools=TOOLS, parent_approval="ask")
    assert err.value.code == "AGENTS_APPROVAL_WIDENS"
    narrowed = build_registry(cfg, known_tools=TOOLS, parent_approval="allow")
    assert narrowed.get("coder").approval == "allow"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="unknown tools"):
        bad = AgentsConfig(workers={"coder": WorkerConfig(tools=["fs.read", "shell.rm"])})
        build_registry(bad, known_tools=TOOLS, parent_approval="deny")


def test_children_inherit_the_parents_approver_or_a_narrower_one(
    root: Path, tmp_path: Path, store: SqliteStore
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret plan")
    cfg = AgentsConfig(workers={"skeptic": WorkerConfig(approval="deny")})
    registry = build_registry(cfg, known_tools=TOOLS, parent_approval="ask")
    workers = Scripts(
        {
            "reviewer": [[call("fs.read", path=str(outside)), deliver("read it")]],
            "skeptic": [
                [
                    call("fs.read", path=str(outside)),
                    {"expect": {"last_contains": ["APPROVAL_DENIED"]}, **deliver("was refused")},
                ]
            ],
        }
    )
    approver = Recording("once")
    model = ScriptedModel(
        [
            call("agents.delegate", worker="reviewer", task="Read the outside file."),
            call("agents.delegate", worker="skeptic", task="Read the outside file."),
            "done",
        ]
    )
    orch = tree(
        model,
        root,
        store,
        registry,
        model_for=workers,
        settings=TeamSettings(approval="ask"),
        approver=approver,
    )
    result = asyncio.run(orch.run("Read a file outside the project twice."))
    assert result.status == "completed", result.reason
    workers.assert_all_used()
    # Asked once, for the reviewer (inherited); the skeptic's "deny" never asked anyone.
    assert [r.decision.code for r in approver.asked] == ["PATH_OUTSIDE_ROOT"]


def _waiting_worker(started: asyncio.Queue[str], name: str) -> Model:
    async def turn(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        started.put_nowait(name)
        await asyncio.Event().wait()  # never answers: only a cancellation ends it
        raise AssertionError("unreachable")

    return FunctionModel(turn, name=f"wait-{name}")


def test_cancelling_the_parent_cancels_every_child(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    async def scenario() -> tuple[object, list[str]]:
        started: asyncio.Queue[str] = asyncio.Queue()
        model = ScriptedModel(
            [
                call(
                    "agents.debate",
                    workers=["coder", "reviewer", "skeptic"],
                    question="Anything?",
                )
            ]
        )
        orch = tree(
            model,
            root,
            store,
            registry,
            model_for=lambda spec: _waiting_worker(started, spec.name),
        )
        control = RunControl()
        run = asyncio.create_task(orch.run("Debate forever.", control=control))
        names = [await asyncio.wait_for(started.get(), 5) for _ in range(3)]
        control.interrupt()  # pause: waits for the children
        control.interrupt()  # cancel: the whole tree stops now
        return await asyncio.wait_for(run, 5), names

    result, names = asyncio.run(scenario())
    assert sorted(names) == ["coder", "reviewer", "skeptic"]
    assert result.status == "interrupted"  # type: ignore[attr-defined]
    assert result.reason.startswith("RUN_CANCELLED")  # type: ignore[attr-defined]
    parent = result.session_id  # type: ignore[attr-defined]
    children = store.list_children(parent)
    assert len(children) == 3  # no judge was started
    for child in children:
        assert child.state == "paused", child
        assert str(child.meta.get("last_reason", "")).startswith("RUN_CANCELLED")


def test_the_concurrency_limit_bounds_parallel_children(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    active = 0
    peak = 0

    async def turn(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.05)
        active -= 1
        args = {"summary": "ok"}
        return ModelTurn(tool_calls=(ToolCallPart("d", "deliver", args),))

    model = ScriptedModel(
        [
            call(
                "agents.debate",
                workers=["coder", "reviewer", "skeptic", "writer"],
                question="q",
            ),
            "done",
        ]
    )
    orch = tree(
        model,
        root,
        store,
        registry,
        model_for=lambda spec: FunctionModel(turn),
        settings=TeamSettings(concurrency=2),
    )
    result = asyncio.run(orch.run("q"))
    assert result.status == "completed", result.reason
    assert peak == 2


def test_the_shared_budget_stops_children_and_the_tree(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    usage = {"input_tokens": 40, "output_tokens": 20}
    workers = Scripts(
        {
            "coder": [
                [
                    {"usage": usage, **call("fs.write", path="a.txt", content="a")},
                    deliver("never reached"),
                ]
            ]
        }
    )
    model = ScriptedModel([call("agents.delegate", worker="coder", task="Write a.txt"), "no"])
    orch = tree(
        model,
        root,
        store,
        registry,
        model_for=workers,
        settings=TeamSettings(budget=BudgetConfig(max_tokens=50)),
    )
    result = asyncio.run(orch.run("Write a.txt"))
    assert result.status == "interrupted"
    assert result.reason.startswith("BUDGET_EXHAUSTED: the tree used 60 tokens")
    failure = result.tool_calls[0].result
    assert failure.error_code == "BUDGET_EXHAUSTED" and "60 tokens" in failure.message
    (child,) = store.list_children(result.session_id)
    assert child.state == "paused" and failure.data["session_id"] == child.id
    assert (root / "a.txt").read_text() == "a"


def test_failed_and_timed_out_children_are_results_not_crashes(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    slow = replace(registry.get("coder"), time_limit_s=0.3)  # type: ignore[arg-type]
    registry.add(slow)

    async def sleepy(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        await asyncio.sleep(30)
        return ModelTurn("late")

    def rejecting(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        raise ModelRequestRejected("the provider refused the request", status=400)

    def model_for(spec: WorkerSpec) -> Model:
        return FunctionModel(sleepy if spec.name == "coder" else rejecting)

    model = ScriptedModel(
        [
            call("agents.delegate", worker="coder", task="Take forever."),
            {
                "expect": {"last_ok": False, "last_contains": ["CHILD_TIMEOUT"]},
                **call("agents.delegate", worker="reviewer", task="Fail."),
            },
            {
                "expect": {"last_ok": False, "last_contains": ["CHILD_FAILED"]},
                "text": "both failed",
            },
        ]
    )
    orch = tree(
        model,
        root,
        store,
        registry,
        model_for=model_for,
    )
    result = asyncio.run(asyncio.wait_for(orch.run("Try two workers."), 10))
    assert result.status == "completed", result.reason
    timeout, failed = (r.result for r in result.tool_calls)
    assert timeout.error_code == "CHILD_TIMEOUT" and "0.3s" in timeout.message
    assert failed.error_code == "CHILD_FAILED"
    assert "refused the request" in failed.message and failed.hint
    states = [c.state for c in store.list_children(result.session_id)]
    assert states == ["paused", "failed"]


def test_budget_counts_cost_and_time() -> None:
    from xclaw.agents.budget import TreeBudget
    from xclaw.models.info import ModelInfo

    priced = ModelInfo("m", None, 1.0, 3.0)  # dollars per million tokens
    budget = TreeBudget(max_usd=0.004)
    budget.add(1_000, 1_000, priced)  # $0.004
    budget.add(500, None, ModelInfo("free", None, None, None))
    assert budget.tokens == 2_500 and budget.unpriced_tokens == 500
    assert budget.exhausted() == "the tree spent $0.0040 of its $0.004 budget"
    late = TreeBudget(max_seconds=0.01, started=0.0)
    assert late.exhausted() == "the tree ran longer than its 0.01s budget"
    assert TreeBudget(max_tokens=10).exhausted() is None
