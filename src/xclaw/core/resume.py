"""Resuming a recorded run (seed 000 §9.2, seed 003 ch. 06).

Tool calls the last assistant turn asked for, but whose results never reached the model, are
settled from the ledger before the loop continues:
- completed (result saved) → the saved result is sent, nothing runs again;
- prepared only, or unknown → the normal path: policy, approval, then run;
- started, read-only → run again;
- started, with side effects → the user decides (run again / skip); without a decision the
  session pauses.
"""

from __future__ import annotations

from typing import Any, Literal

from xclaw.core.dispatch import DispatchDeps, call_summary, run_tool_calls
from xclaw.core.messages import Message, ToolCallPart, ToolResult
from xclaw.core.recorder import call_key
from xclaw.core.state import RunState
from xclaw.core.tooling import ApprovalRequest, Decision, Risk

InterruptedChoice = Literal["ask", "retry", "skip"]

RESUME_REMINDER = (
    "[System: the previous run was interrupted (a crash or a stop). Continue from the "
    "history above; do not start over. Results of interrupted tool calls are included above.]"
)


def pending_calls(messages: list[Message]) -> list[ToolCallPart]:
    """Calls of the last assistant turn that have no results yet."""
    if messages and messages[-1].role == "assistant":
        return messages[-1].tool_calls
    return []


def skipped_result(call: ToolCallPart) -> ToolResult:
    return ToolResult.failure(
        "INTERRUPTED_CALL_SKIPPED",
        f"{call.name} was running when xclaw stopped and the user chose not to run it again; "
        "its effect is unknown.",
        hint="Check the project state (read the files, project.status) before going on.",
    )


async def _ask(deps: DispatchDeps, call: ToolCallPart) -> InterruptedChoice:
    decision = Decision(
        "ask",
        Risk.DESTRUCTIVE,
        "this call was running when xclaw stopped; its effect is unknown. Run it again?",
        code="INTERRUPTED_CALL",
    )
    summary = (
        f"{call_summary(call)} was running when xclaw stopped; its effect is unknown. "
        "Approve to run it again, deny to skip it."
    )
    answer = await deps.approver.approve(ApprovalRequest(call.name, summary, decision))
    return "skip" if answer == "deny" else "retry"


async def settle_pending(
    state: RunState, deps: DispatchDeps, choice: InterruptedChoice | None
) -> dict[str, Any] | None:
    """Settle unfinished calls; returns the pending decision when the session must pause."""
    calls = pending_calls(state.messages)
    if not calls:
        return None
    known: dict[str, ToolResult] = {}
    for call in calls:
        prior = state.recorder.prior(call_key(state.turn, call.call_id))
        if prior is None:
            continue
        if prior.result is not None and prior.phase in ("completed", "result_sent"):
            known[call.call_id] = prior.result
        elif prior.phase == "started" and not prior.read_only:
            decided = await _ask(deps, call) if choice == "ask" else choice
            if decided is None:
                return {
                    "call_id": call.call_id,
                    "name": call.name,
                    "turn": state.turn,
                    "arguments": call.arguments,
                    "question": "run the interrupted call again, or skip it?",
                }
            if decided == "skip":
                known[call.call_id] = skipped_result(call)
    await run_tool_calls(state, deps, calls, known=known)
    return None
