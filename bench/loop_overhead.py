"""Loop overhead: ms per step for N-step runs, xclaw vs pydantic-ai, in the same process.

Each step is one file read of a small file; the model is handed the whole conversation each
turn (as a real one is). xclaw runs its real loop, policy and ``fs.read`` tool with a
``ScriptedModel``; pydantic-ai runs the same calls through its ``FunctionModel`` with an
equivalent read tool. Run: ``make bench`` (or ``python bench/loop_overhead.py 200 1000``).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic_ai import Agent as PaiAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from xclaw import Agent, Limits, ScriptedModel

SMALL_FILE = "".join(f"line {i}: some small content\n" for i in range(20))


def xclaw_ms_per_step(root: Path, steps: int) -> float:
    turns: list[dict[str, Any] | str] = [
        {"tool_calls": [{"name": "fs.read", "arguments": {"path": "small.txt"}}]}
        for _ in range(steps)
    ]
    turns.append("done")
    model = ScriptedModel(turns)
    limits = Limits(max_turns=steps + 10, max_identical_calls=steps + 10)
    agent = Agent(model, root, limits=limits, evidence_gate_enabled=False)
    gc.collect()
    start = time.perf_counter()
    result = asyncio.run(agent.run("read small.txt many times"))
    elapsed = time.perf_counter() - start
    assert result.ok and result.metrics.tool_calls == steps, result.reason
    assert all(r.result.ok for r in result.tool_calls)
    return elapsed * 1000 / steps


def pydantic_ai_ms_per_step(root: Path, steps: int) -> float:
    count = {"n": 0}

    def model_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        count["n"] += 1
        if count["n"] > steps:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("fs_read", {"path": "small.txt"})])

    agent = PaiAgent(FunctionModel(model_fn))

    @agent.tool_plain
    def fs_read(path: str) -> str:
        """Read a file inside the root, line-numbered."""
        target = (root / path).resolve()
        if root not in target.parents:
            raise ValueError("outside root")
        lines = target.read_text(encoding="utf-8").splitlines()
        return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, 1))

    gc.collect()
    start = time.perf_counter()
    result = agent.run_sync(
        "read small.txt many times", usage_limits=UsageLimits(request_limit=None)
    )
    elapsed = time.perf_counter() - start
    assert result.output == "done" and count["n"] == steps + 1
    return elapsed * 1000 / steps


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory(prefix="xclaw-bench-") as tmp:
        root = Path(tmp).resolve()
        (root / "small.txt").write_text(SMALL_FILE)
        xclaw_ms_per_step(root, 20)  # warm imports and caches for both
        pydantic_ai_ms_per_step(root, 20)
        print(f"{'steps':>6} {'xclaw ms/step':>14} {'pydantic-ai ms/step':>20} {'ratio':>8}")
        for steps in sizes:
            ours = xclaw_ms_per_step(root, steps)
            peer = pydantic_ai_ms_per_step(root, steps)
            print(f"{steps:>6} {ours:>14.3f} {peer:>20.3f} {peer / ours:>7.1f}x")
    print("ratio = pydantic-ai time / xclaw time (higher is better for xclaw)")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [200, 1000])
