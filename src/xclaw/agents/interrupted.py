"""Children cut off by a crash: how a resume of their parent settles them.

A call with side effects that a child had started when xclaw stopped (a SIGKILL, a power cut)
may or may not have had its effect. Every resume of the parent settles each such call the
way the user chose before the tree goes on:

- ``ask``: a terminal asks, per call (``InterruptedAsker`` routes that one question to it);
- ``retry`` / ``skip``: run it again / do not (the child is told its effect is unknown);
- ``pause``: nothing runs; the parent and the children wait, paused with a
  ``CHILD_PAUSED`` reason that names the command deciding it.

Without a terminal the choice is ``agents.on_interrupted`` in xclaw.yaml (default ``skip``).
Pausing is decided before the parent's loop continues: a tree never goes on with a child
left waiting (a debate judged on one answer, a pipeline step missing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from xclaw.core.resume import InterruptedChoice
from xclaw.core.state import RunMetrics, RunResult
from xclaw.core.tooling import Answer, ApprovalRequest, Approver
from xclaw.redact import redact
from xclaw.store.base import Store, WriteBatch

ResumeChoice = Literal["ask", "retry", "skip", "pause"]

INTERRUPTED_CALL = "INTERRUPTED_CALL"  # the decision code of core.resume's question


@dataclass(frozen=True, slots=True)
class CutOffCall:
    """A child's call with side effects that started and never recorded a result."""

    child: str
    worker: str
    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.worker}'s {self.name}"


def cut_off_calls(store: Store, parent_id: str) -> list[CutOffCall]:
    """The calls a resume of ``parent_id`` must settle, in child order."""
    found: list[CutOffCall] = []
    for child in store.list_children(parent_id):
        if child.state == "success":
            continue
        worker = str((child.meta.get("agents") or {}).get("worker", "worker"))
        for entry in store.load_ledger(child.id):
            if entry.phase == "started" and not entry.read_only and entry.result is None:
                found.append(
                    CutOffCall(
                        child.id, worker, entry.turn, entry.call_id, entry.name, entry.arguments
                    )
                )
    return found


def settle_choice(choice: ResumeChoice) -> InterruptedChoice | None:
    """What a resumed child gets; ``None`` (pause) never reaches a child of a tree."""
    return None if choice == "pause" else choice


def decide_commands(parent_id: str) -> tuple[str, str]:
    return (
        f"xclaw resume {parent_id} --skip-interrupted",
        f"xclaw resume {parent_id} --retry-interrupted",
    )


def paused_reason(parent_id: str, calls: list[CutOffCall]) -> str:
    skip, retry = decide_commands(parent_id)
    names = ", ".join(c.label for c in calls)
    return (
        f"CHILD_PAUSED: {names} was running when xclaw stopped and may have had an effect; "
        f"nothing ran. Decide with `{skip}` (do not run it again) or `{retry}` (run it again), "
        "or set agents.on_interrupted in xclaw.yaml."
    )


def pause_tree(store: Store, parent_id: str, calls: list[CutOffCall]) -> RunResult:
    """Record the parent and the cut-off children as paused, waiting for the decision."""
    reason = paused_reason(parent_id, calls)
    for call in calls:
        question = "run the interrupted call again, or skip it?"
        store.commit(WriteBatch(call.child, session_updates=_paused(_pending(call, question))))
    pending = _pending(calls[0], "run the interrupted calls of its children again, or skip them?")
    pending["children"] = [_pending(c, "") for c in calls]
    updates = _paused(pending)
    parent = store.get_session(parent_id)
    updates["meta"] = {**(parent.meta if parent else {}), "last_reason": redact(reason)}
    store.commit(WriteBatch(parent_id, session_updates=updates))
    metrics = RunMetrics(0, 0, 0, 1.0, None, None, 0.0)
    return RunResult(parent_id, "interrupted", reason, "", [], [], metrics)


def _paused(pending: dict[str, Any]) -> dict[str, Any]:
    return {"state": "paused", "phase": "PAUSED", "pending": pending}


def _pending(call: CutOffCall, question: str) -> dict[str, Any]:
    """The shape of a paused session's decision (``core.resume``), naming the child."""
    out: dict[str, Any] = {
        "call_id": call.call_id,
        "name": call.label,
        "turn": call.turn,
        "arguments": call.arguments,
        "child": call.child,
    }
    if question:
        out["question"] = question
    return out


class InterruptedAsker:
    """An approver that sends the "run this cut-off call again?" question to ``asker`` (a
    terminal) and every other request to the run's own approver."""

    def __init__(self, inner: Approver, asker: Approver, worker: str) -> None:
        self.inner = inner
        self.asker = asker
        self.worker = worker

    async def approve(self, request: ApprovalRequest) -> Answer:
        if request.decision.code != INTERRUPTED_CALL:
            return await self.inner.approve(request)
        named = ApprovalRequest(request.tool, f"{self.worker}: {request.summary}", request.decision)
        return await self.asker.approve(named)
