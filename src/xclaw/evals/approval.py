"""Who answers a policy *ask* during an eval case: nobody is at the keyboard.

``deny`` (the default) refuses every ask except the rules the case declares in ``allow`` —
the same narrow rules an *allow for task* answer would grant (``program python3``,
``network npm``, ``git push``, ``tool:process.start``). Path grants outside the case copy are
never given by a rule. ``allow`` approves every ask once, as ``xclaw run --approval allow``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from xclaw.core.tooling import Answer, ApprovalRequest

ApprovalMode = Literal["deny", "allow"]


class CaseApprover:
    """Implements ``core.tooling.Approver`` for one case; counts what it was asked."""

    def __init__(self, mode: ApprovalMode, rules: Iterable[str] = ()) -> None:
        if mode not in ("deny", "allow"):
            raise ValueError(f"approval mode must be 'deny' or 'allow', not {mode!r}")
        self.mode = mode
        self.rules = frozenset(r.strip() for r in rules if r.strip())
        self.asked: list[str] = []
        self.denied: list[str] = []

    async def approve(self, request: ApprovalRequest) -> Answer:
        decision = request.decision
        grant = decision.grant
        what = f"{request.tool}: {decision.reason or decision.code}"
        self.asked.append(what)
        if self.mode == "allow":
            return "once"
        if grant is not None and grant.kind == "command" and grant.value in self.rules:
            return "once"
        self.denied.append(what)
        return "deny"
