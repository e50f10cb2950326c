"""Checkpoints of a coding run (seed 000 §11): goal, modified files, verification, open items."""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any

from xclaw.core.hooks import AfterTools
from xclaw.core.state import RunState, ToolCallRecord
from xclaw.store.base import Checkpoint
from xclaw.tools.base import Workspace


def build_checkpoint(state: RunState, workspace: Workspace) -> dict[str, Any]:
    records = state.all_records()
    last_runs = islice((r for r in reversed(records) if r.name == "terminal.exec"), 10)
    verification = [
        {
            "command": [r.input.get("program"), *r.input.get("argv", [])],
            "ok": r.result.ok,
            "exit_code": r.result.data.get("exit_code"),
            "turn": r.turn,
        }
        for r in reversed(list(last_runs))
    ]
    open_items = [
        f"{r.name} failed at turn {r.turn}: {r.result.error_code}"
        for r in records[-20:]
        if not r.result.ok
    ]
    return {
        "goal": state.task,
        "modified_files": list(workspace.changed_files),
        "verification": verification,
        "open_items": open_items,
    }


def checkpoint_hook(
    workspace: Workspace,
    every: int,
    *,
    since: int = 0,
    on_checkpoint: Callable[[int], None] | None = None,
) -> AfterTools:
    """Record a checkpoint every ``every`` model turns of the session, counted from turn
    ``since`` (its last checkpoint: a follow-up or a resume goes on counting, so a chat of
    short turns is not checkpointed at each message); ``on_checkpoint`` is told each turn
    checkpointed."""
    last = {"turn": since}

    def hook(state: RunState, records: list[ToolCallRecord]) -> None:
        compacted = state.extra.get("checkpoints") or []
        for data in compacted[last.get("compacted", 0) :]:
            if data.get("ok", True):
                state.recorder.checkpoint(state, data)
        last["compacted"] = len(compacted)
        if state.turn - last["turn"] >= every:
            last["turn"] = state.turn
            state.recorder.checkpoint(state, build_checkpoint(state, workspace))
            if on_checkpoint is not None:
                on_checkpoint(state.turn)

    return hook


def checkpoint_text(cp: Checkpoint) -> str:
    """A compact summary a fresh model context can continue from."""
    lines = [f"Goal: {cp.goal}", f"Checkpoint at turn {cp.turn}."]
    if cp.modified_files:
        lines.append("Modified files: " + ", ".join(cp.modified_files))
    for v in cp.verification:
        if "check" in v:  # written by context compaction: free text from the summary
            lines.append(f"Verification {v['check']}: {v.get('outcome', '')}")
            continue
        words = " ".join(str(x) for x in v.get("command", []) if x)
        lines.append(f"Verification `{words}`: {'ok' if v.get('ok') else 'failed'}")
    if cp.open_items:
        lines.append("Open items: " + "; ".join(cp.open_items))
    return "\n".join(lines)
