"""Multi-agent debate: wall time of three workers debating in parallel versus one at a time.

Every model of the run — orchestrator, three debaters, judge — is a scripted model that takes
200 ms per turn (an ``asyncio.sleep``, as a provider's latency would). The orchestrator calls
``agents.debate`` with three workers; each worker delivers in one turn; the judge decides in
one turn; the orchestrator answers. Children are real durable sessions in a SQLite store.
The peer figure is the same run with the concurrency limit at 1 (children one after another),
measured in the same process. Expected: the debate call itself ~0.4 s parallel (debaters
together, then the judge) versus ~0.8 s sequential.
Run: ``make bench`` (or ``python bench/agents_debate.py [repeats]``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xclaw.agents.registry import BUILTIN_WORKERS, WorkerRegistry
from xclaw.agents.team import Orchestrator, TeamSettings
from xclaw.compose.agents import CodingAgents
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import Model, ModelRequest
from xclaw.models.base import ModelTurn
from xclaw.models.scripted import FunctionModel
from xclaw.store.sqlite import open_store

TURN_S = 0.2


def _slow(turns: list[dict[str, Any]]) -> Model:
    """A scripted model (one turn per entry) that takes ``TURN_S`` to answer each turn."""

    async def turn(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        await asyncio.sleep(TURN_S)
        n = sum(1 for m in messages if m.role == "assistant")
        spec = turns[n]
        calls = tuple(
            ToolCallPart(f"c{n}_{i}", c["name"], c["arguments"])
            for i, c in enumerate(spec.get("tool_calls", []))
        )
        return ModelTurn(spec.get("text", ""), calls)

    return FunctionModel(turn)


def _deliver(summary: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "deliver", "arguments": {"summary": summary}}]}


async def one_run(root: Path, concurrency: int) -> tuple[float, float]:
    """(whole run, the debate call) in seconds."""
    orchestrator = _slow(
        [
            {
                "tool_calls": [
                    {
                        "name": "agents.debate",
                        "arguments": {
                            "workers": ["coder", "reviewer", "skeptic"],
                            "question": "SQLite or flat files?",
                        },
                    }
                ]
            },
            {"text": "decided"},
        ]
    )
    with open_store() as store:
        orch = Orchestrator(
            orchestrator,
            root,
            store=store,
            registry=WorkerRegistry(BUILTIN_WORKERS),
            agent_factory=CodingAgents(),
            model_for=lambda spec: _slow([_deliver(f"{spec.name} says SQLite")]),
            settings=TeamSettings(concurrency=concurrency),
        )
        start = time.perf_counter()
        result = await orch.run("Decide the storage.")
        total = time.perf_counter() - start
    assert result.status == "completed", result.reason
    (debate,) = result.tool_calls
    assert debate.result.ok, debate.result
    return total, debate.duration_ms / 1000


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_DATA_HOME"] = str(Path(tmp) / "data")
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        root = Path(tmp) / "proj"
        root.mkdir()
        figures: dict[int, list[tuple[float, float]]] = {3: [], 1: []}
        for _ in range(repeats):
            for concurrency in (3, 1):
                figures[concurrency].append(asyncio.run(one_run(root, concurrency)))
    par_total = statistics.median(t for t, _ in figures[3])
    par_debate = statistics.median(d for _, d in figures[3])
    seq_total = statistics.median(t for t, _ in figures[1])
    seq_debate = statistics.median(d for _, d in figures[1])
    print(
        f"agents debate: 3 workers + judge, {TURN_S * 1000:.0f} ms per model turn, "
        f"median of {repeats}"
    )
    print(
        f"  debate call   parallel {par_debate:.3f} s   sequential {seq_debate:.3f} s   "
        f"speed-up x{seq_debate / par_debate:.2f}"
    )
    print(
        f"  whole run     parallel {par_total:.3f} s   sequential {seq_total:.3f} s   "
        f"speed-up x{seq_total / par_total:.2f}"
    )


if __name__ == "__main__":
    main()
