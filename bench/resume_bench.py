"""Resume latency: from ``Agent.resume`` to the first model call, on a 10,000-step session.

The session is built by the real agent: a ``ScriptedModel`` makes 10,000 ``fs.read`` calls
with a store on a temporary file, and the run stops at its turn limit (so it can be resumed).
Each measurement resumes a fresh copy of that database with a ``FunctionModel`` that notes the
time of its first call and answers with a final text. Target: under 300 ms.

The peer figure, from the same process: pydantic-ai given the same 10,000 calls and results
as ``ModelMessage`` JSON (read from a file and parsed with ``ModelMessagesTypeAdapter``), run
with ``message_history`` until its first model call.
Run: ``make bench`` (or ``python bench/resume_bench.py 10000``).
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic_ai import Agent as PaiAgent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from xclaw import Agent, Limits, Message, ModelTurn, ScriptedModel
from xclaw import FunctionModel as XFunctionModel
from xclaw import ModelRequest as XModelRequest
from xclaw.coding.prompt import SYSTEM_PROMPT
from xclaw.core.resume import RESUME_REMINDER
from xclaw.store.base import TranscriptItem
from xclaw.store.sqlite import open_store

TARGET_MS = 300.0
REPEATS = 5
SMALL_FILE = "".join(f"line {i}: some small content\n" for i in range(20))
TASK = "read small.txt many times"


def build_session(root: Path, db: Path, steps: int) -> str:
    turns: list[dict[str, Any] | str] = [
        {"tool_calls": [{"name": "fs.read", "arguments": {"path": "small.txt"}}]}
        for _ in range(steps)
    ]
    turns.append("done")
    limits = Limits(max_turns=steps, max_identical_calls=steps + 10)
    with open_store(db) as store:
        agent = Agent(
            ScriptedModel(turns), root, limits=limits, evidence_gate_enabled=False, store=store
        )
        result = asyncio.run(agent.run(TASK))
        assert result.status == "interrupted" and result.metrics.tool_calls == steps, result.reason
    return result.session_id


def xclaw_resume_ms(root: Path, db: Path, sid: str, work: Path) -> float:
    """One resume of a fresh copy of the database, until the model is first asked."""
    copy = work / "copy" / "xclaw.db"
    shutil.rmtree(copy.parent, ignore_errors=True)
    copy.parent.mkdir(parents=True)
    shutil.copyfile(db, copy)
    first: list[float] = []

    def answer(messages: Sequence[Message], request: XModelRequest) -> ModelTurn:
        if not first:
            first.append(time.perf_counter())
        return ModelTurn("resumed")

    with open_store(copy) as store:
        agent = Agent(
            XFunctionModel(answer),
            root,
            store=store,
            limits=Limits(max_turns=10**9),
            evidence_gate_enabled=False,
        )
        start = time.perf_counter()
        result = asyncio.run(agent.resume(sid))
        assert result.status == "completed" and first, result.reason
    return (first[0] - start) * 1000


def peer_history(items: list[TranscriptItem]) -> list[ModelMessage]:
    """The same conversation as pydantic-ai messages (same call ids, same result text)."""
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart(SYSTEM_PROMPT), UserPromptPart(TASK)])
    ]
    for item in items:
        p = item.payload
        if p["type"] == "function_call":
            call = ToolCallPart("fs_read", p["arguments"], tool_call_id=p["call_id"])
            messages.append(ModelResponse(parts=[call]))
        elif p["type"] == "function_call_output":
            ret = ToolReturnPart("fs_read", p["output"], tool_call_id=p["call_id"])
            messages.append(ModelRequest(parts=[ret]))
    return messages


def pydantic_ai_resume_ms(root: Path, history_file: Path) -> float:
    first: list[float] = []

    def model_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not first:
            first.append(time.perf_counter())
        return ModelResponse(parts=[TextPart("resumed")])

    agent = PaiAgent(FunctionModel(model_fn))

    @agent.tool_plain
    def fs_read(path: str) -> str:
        """Read a file inside the root, line-numbered."""
        return (root / path).read_text(encoding="utf-8")

    async def go(data: bytes) -> None:
        history = ModelMessagesTypeAdapter.validate_json(data)
        result = await agent.run(
            RESUME_REMINDER,
            message_history=history,
            usage_limits=UsageLimits(request_limit=None),
        )
        assert result.output == "resumed" and first

    start = time.perf_counter()  # as for xclaw: reading the history is part of it
    asyncio.run(go(history_file.read_bytes()))
    return (first[0] - start) * 1000


def main(steps: int) -> None:
    with tempfile.TemporaryDirectory(prefix="xclaw-resume-bench-") as tmp:
        work = Path(tmp)
        os.environ["XDG_DATA_HOME"] = str(work / "xdg")  # run output folders stay in here
        root = work / "proj"
        root.mkdir()
        root = root.resolve()
        (root / "small.txt").write_text(SMALL_FILE)
        db = work / "data" / "xclaw.db"
        built = time.perf_counter()
        sid = build_session(root, db, steps)
        with open_store(db) as store:
            items = store.load_items(sid)
        history_file = work / "history.json"
        history_file.write_bytes(ModelMessagesTypeAdapter.dump_json(peer_history(items)))
        print(
            f"session: {steps} steps, {len(items)} transcript items, db "
            f"{db.stat().st_size / 1e6:.1f} MB, built in {time.perf_counter() - built:.1f}s; "
            f"peer history JSON {history_file.stat().st_size / 1e6:.1f} MB"
        )
        del items  # a real `xclaw resume` process holds no second copy of the history
        gc.collect()
        ours = [xclaw_resume_ms(root, db, sid, work) for _ in range(REPEATS)]
        peer = [pydantic_ai_resume_ms(root, history_file) for _ in range(REPEATS)]
    ours_ms, peer_ms = statistics.median(ours), statistics.median(peer)
    verdict = "ok" if ours_ms < TARGET_MS else "MISSED"
    print(f"{'':>28} {'median ms':>10} {'min ms':>8}")
    target = f"target <{TARGET_MS:g}: {verdict}"
    print(f"{'xclaw resume (SQLite)':>28} {ours_ms:>10.1f} {min(ours):>8.1f}  {target}")
    print(f"{'pydantic-ai (JSON history)':>28} {peer_ms:>10.1f} {min(peer):>8.1f}")
    print(f"ratio = pydantic-ai / xclaw = {peer_ms / ours_ms:.2f}x (higher is better for xclaw)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
