"""Approvers answer a policy *ask* (seed 000 §8.3): allow once, allow for task, or deny.

``ModeApprover`` answers by configuration (``--approval allow|deny``); ``CallbackApprover``
wraps a synchronous prompt such as the console's. The coded results below are what the model
reads back when a call is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Answer, ApprovalRequest, Decision

APPROVAL_DENIED = "APPROVAL_DENIED"

_LINE_CAP = 240


class ModeApprover:
    """Answers every request the same way: ``allow`` approves once, ``deny`` refuses."""

    def __init__(self, mode: Literal["allow", "deny"]) -> None:
        if mode not in ("allow", "deny"):
            raise ValueError(f"approval mode must be 'allow' or 'deny', not {mode!r}")
        self.mode = mode

    async def approve(self, request: ApprovalRequest) -> Answer:
        return "once" if self.mode == "allow" else "deny"


ApprovalCallback = Callable[[ApprovalRequest], Answer]


class CallbackApprover:
    """Asks a synchronous callback, e.g. a console prompt.

    The callback runs on the loop's thread: the run is waiting for the answer anyway, and a
    prompt blocked in a worker thread would keep the process alive after Ctrl+C. Anything but
    a valid answer, and a closed input (EOFError), counts as *deny*: fail closed.
    """

    def __init__(self, callback: ApprovalCallback) -> None:
        self.callback = callback

    async def approve(self, request: ApprovalRequest) -> Answer:
        try:
            answer = self.callback(request)
        except EOFError:
            return "deny"
        if answer == "once" or answer == "task":
            return answer
        return "deny"


def _clip(text: str) -> str:
    return text if len(text) <= _LINE_CAP else text[: _LINE_CAP - 1] + "…"


def summarize_request(req: ApprovalRequest) -> str:
    """Two lines for a prompt: what wants approval and why; then targets and the task rule."""
    d = req.decision
    first = f"{req.tool} needs approval [{d.risk}]: {d.reason or 'no reason given'}"
    details: list[str] = []
    if d.targets:
        details.append("targets: " + ", ".join(d.targets))
    elif req.summary and req.summary != req.tool:
        details.append("call: " + req.summary)
    if d.grant is not None:
        details.append(f"allow for task would allow {d.grant.describe()}")
    else:
        details.append("allow for task is not offered for this request")
    return _clip(first) + "\n  " + _clip("; ".join(details))


def approval_denied_result(decision: Decision) -> ToolResult:
    """What the model reads when the human answered *deny*."""
    return ToolResult.failure(
        APPROVAL_DENIED,
        f"The user did not approve this call ({decision.reason}). Nothing ran.",
        hint="Find a way that stays inside the project and avoids risky commands, or ask the user.",
        data={"policy_code": decision.code, "risk": str(decision.risk)},
    )


_NEXT_STEP = {
    "PATH_INVALID": "Use a path relative to the project root, with forward slashes.",
    "PATH_SYMLINK_ESCAPE": "That symlink points out of the project; use files inside it.",
    "PATH_SPECIAL": "Only regular files and folders can be used; pick a regular file.",
    "PATH_NOT_FOUND": "List the folder to find the right path.",
}


def policy_denied_result(decision: Decision) -> ToolResult:
    """What the model reads when policy refused outright (no human can approve it)."""
    return ToolResult.failure(
        decision.code or "POLICY_DENIED",
        f"Refused by local policy: {decision.reason}",
        hint=_NEXT_STEP.get(
            decision.code, "Choose another approach inside the project; this cannot be approved."
        ),
        data={"risk": str(decision.risk)},
    )
