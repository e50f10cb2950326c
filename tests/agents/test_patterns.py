"""Debate (three workers in parallel, judged) and pipeline (three steps with {{input}})."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from tests.agents.conftest import Scripts, call, deliver, tree

from xclaw.agents.registry import WorkerRegistry, WorkerSpec
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import Model, ModelRequest
from xclaw.models.base import ModelTurn
from xclaw.models.scripted import FunctionModel, ScriptedModel
from xclaw.store.sqlite import SqliteStore


def test_debate_runs_three_workers_in_parallel_then_a_judge(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    barrier = asyncio.Barrier(3)  # passes only when all three debaters are asking at once
    positions = {"coder": "use SQLite", "reviewer": "use SQLite", "skeptic": "use flat files"}
    judged: list[str] = []

    def debater(name: str) -> Model:
        async def turn(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
            async with asyncio.timeout(5):
                await barrier.wait()
            args = {"summary": positions[name], "summary_data": {"vote": positions[name]}}
            return ModelTurn(tool_calls=(ToolCallPart(f"d-{name}", "deliver", args),))

        return FunctionModel(turn, name=f"fn-{name}")

    def judge(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        judged.append(messages[-1].text)
        args = {"summary": "SQLite, two votes to one", "summary_data": {"decision": "sqlite"}}
        return ModelTurn(tool_calls=(ToolCallPart("j1", "deliver", args),))

    def model_for(spec: WorkerSpec) -> Model:
        return FunctionModel(judge, "fn-judge") if spec.name == "judge" else debater(spec.name)

    orch_model = ScriptedModel(
        [
            call(
                "agents.debate",
                workers=["coder", "reviewer", "skeptic"],
                question="Where should the app keep its data?",
            ),
            {"expect": {"last_contains": ["judge decided: SQLite"]}, "text": "SQLite it is."},
        ]
    )
    orch = tree(
        orch_model,
        root,
        store,
        registry,
        model_for=model_for,
    )
    result = asyncio.run(orch.run("Decide where the app keeps its data."))

    assert result.status == "completed", result.reason
    data = result.tool_calls[0].result.data
    assert data["decision"]["summary_data"] == {"decision": "sqlite"}
    assert [a["worker"] for a in data["answers"]] == ["coder", "reviewer", "skeptic"]
    assert data["answers"][2]["summary"] == "use flat files"
    # The judge saw every answer; the parent saw summaries only.
    assert all(p in judged[0] for p in positions.values())
    children = store.list_children(result.session_id)
    assert sorted(c.meta["agents"]["worker"] for c in children) == [
        "coder",
        "judge",
        "reviewer",
        "skeptic",
    ]


def test_debate_over_two_rounds_shows_each_worker_the_others(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    workers = Scripts(
        {
            "coder": [[deliver("A")], [deliver("A still")]],
            "skeptic": [
                [deliver("B")],
                [{"expect": {"last_contains": ["[coder] A"]}, **deliver("B, but A is fine")}],
            ],
            "judge": [[{"expect": {"last_contains": ["A still"]}, **deliver("A")}]],
        }
    )
    orch_model = ScriptedModel(
        [call("agents.debate", workers=["coder", "skeptic"], question="A or B?", rounds=2), "A."]
    )
    orch = tree(
        orch_model,
        root,
        store,
        registry,
        model_for=workers,
    )
    result = asyncio.run(orch.run("A or B?"))
    assert result.status == "completed", result.reason
    assert result.tool_calls[0].result.data["rounds"] == 2
    workers.assert_all_used()
    assert len(store.list_children(result.session_id)) == 5


def test_pipeline_feeds_each_delivery_into_the_next_step(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    def expect(*needles: str) -> dict[str, object]:
        return {"expect": {"last_contains": list(needles)}}

    workers = Scripts(
        {
            "coder": [
                [
                    {
                        **expect("Extract from: raw sales"),
                        **call("fs.write", path="facts.json", content='{"q1": 10, "q2": 30}'),
                    },
                    deliver("extracted 2 quarters", {"quarters": 2}, facts="facts.json"),
                ]
            ],
            "skeptic": [
                [
                    {
                        **expect(
                            "Analyse: extracted 2 quarters",
                            '"quarters": 2',
                            "facts=facts.json",  # the model sees paths relative to the root
                        ),
                        **call("fs.read", path="facts.json"),
                    },
                    deliver("sales tripled", {"growth": 3.0}),
                ]
            ],
            "reviewer": [
                [
                    {
                        **expect("Report on: sales tripled"),
                        **deliver("report: Q2 sales were three times Q1", {"final": True}),
                    }
                ]
            ],
        }
    )
    orch_model = ScriptedModel(
        [
            call(
                "agents.pipeline",
                input="raw sales",
                steps=[
                    {"worker": "coder", "task": "Extract from: {{input}}"},
                    {"worker": "skeptic", "task": "Analyse: {{input}}"},
                    {"worker": "reviewer", "task": "Report on: {{input}}"},
                ],
            ),
            {"expect": {"last_contains": ["report: Q2 sales"]}, "text": "Q2 tripled."},
        ]
    )
    orch = tree(
        orch_model,
        root,
        store,
        registry,
        model_for=workers,
    )
    result = asyncio.run(orch.run("Turn the raw sales into a report."))

    assert result.status == "completed", result.reason
    workers.assert_all_used()
    data = result.tool_calls[0].result.data
    assert data["summary_data"] == {"final": True}
    assert [s["summary"] for s in data["steps"]] == [
        "extracted 2 quarters",
        "sales tripled",
        "report: Q2 sales were three times Q1",
    ]
    children = store.list_children(result.session_id)
    assert [c.task for c in children] == [
        "Extract from: raw sales",
        "Analyse: extracted 2 quarters\ndata: "
        + '{"quarters": 2}'
        + f"\nartifacts: facts={root / 'facts.json'}",
        'Report on: sales tripled\ndata: {"growth": 3.0}',
    ]


def test_a_failed_pipeline_step_is_a_structured_result(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    orch_model = ScriptedModel(
        [
            call(
                "agents.pipeline",
                steps=[
                    {"worker": "coder", "task": "x"},
                    {"worker": "nobody", "task": "{{input}}"},
                ],
            ),
            {"expect": {"last_ok": False, "last_contains": ["WORKER_UNKNOWN"]}, "text": "failed"},
        ]
    )
    workers = Scripts({"coder": [[deliver("did x")]]})
    orch = tree(
        orch_model,
        root,
        store,
        registry,
        model_for=workers,
    )
    result = asyncio.run(orch.run("x then y"))
    assert result.status == "completed"
    failure = result.tool_calls[0].result
    assert failure.error_code == "WORKER_UNKNOWN" and failure.data["failed_step"] == 2
    assert "Use one of: coder" in failure.hint
