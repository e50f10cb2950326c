"""Durable loop overhead: ms per step with every step recorded in the SQLite store.

The same N-step run as ``loop_overhead.py`` (one ``fs.read`` per turn, real loop, policy and
tool), but the agent has a store on a temporary file: every barrier of the run — before each
model call, around each side effect — is a committed SQLite transaction, plus the steps,
ledger rows and events. Beside it, pydantic-ai's in-memory run of the same calls, timed in the
same process. Target: under 2 ms per step at 200 and 1,000 steps.
Run: ``make bench`` (or ``python bench/durable_loop.py 200 1000``).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from loop_overhead import SMALL_FILE, pydantic_ai_ms_per_step
from xclaw import Agent, Limits, ScriptedModel
from xclaw.store.sqlite import open_store

TARGET_MS = 2.0


def durable_ms_per_step(root: Path, db: Path, steps: int) -> float:
    turns: list[dict[str, Any] | str] = [
        {"tool_calls": [{"name": "fs.read", "arguments": {"path": "small.txt"}}]}
        for _ in range(steps)
    ]
    turns.append("done")
    limits = Limits(max_turns=steps + 10, max_identical_calls=steps + 10)
    with open_store(db) as store:
        agent = Agent(
            ScriptedModel(turns), root, limits=limits, evidence_gate_enabled=False, store=store
        )
        gc.collect()
        start = time.perf_counter()
        result = asyncio.run(agent.run("read small.txt many times"))
        elapsed = time.perf_counter() - start
        assert result.ok and result.metrics.tool_calls == steps, result.reason
        recorded = store.list_steps(result.session_id)
        # user input + (model call + tool call) per step + the final answer
        assert len(recorded) == 2 * steps + 2, len(recorded)
        session = store.get_session(result.session_id)
        assert session is not None and session.state == "success"
    return elapsed * 1000 / steps


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory(prefix="xclaw-bench-") as tmp:
        root = Path(tmp, "proj")
        root.mkdir()
        root = root.resolve()
        (root / "small.txt").write_text(SMALL_FILE)
        db = Path(tmp, "data", "xclaw.db")
        durable_ms_per_step(root, db, 20)  # warm imports and caches for both
        pydantic_ai_ms_per_step(root, 20)
        print(
            f"{'steps':>6} {'xclaw durable ms/step':>22} {'pydantic-ai in-memory ms/step':>30}"
            f" {'ratio':>7} {'target':>8}"
        )
        for steps in sizes:
            ours = durable_ms_per_step(root, db, steps)
            peer = pydantic_ai_ms_per_step(root, steps)
            verdict = "ok" if ours < TARGET_MS else "MISSED"
            print(
                f"{steps:>6} {ours:>22.3f} {peer:>30.3f} {peer / ours:>6.1f}x"
                f" {f'<{TARGET_MS:g} ' + verdict:>8}"
            )
    print("xclaw durable: every step committed to SQLite (WAL); pydantic-ai runs in memory")
    print("ratio = pydantic-ai time / xclaw time (higher is better for xclaw)")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [200, 1000])
