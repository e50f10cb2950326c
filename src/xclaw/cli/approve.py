"""Approval on the terminal: allow once, allow for task (a narrow rule), or deny."""

from __future__ import annotations

import asyncio

from rich.console import Console
from rich.markup import escape
from rich.prompt import Prompt

from xclaw.core.tooling import Answer, ApprovalRequest


class ConsoleApprover:
    def __init__(self, console: Console) -> None:
        self.console = console

    async def approve(self, request: ApprovalRequest) -> Answer:
        return await asyncio.to_thread(self._ask, request)

    def _ask(self, request: ApprovalRequest) -> Answer:
        d = request.decision
        self.console.print(f"[bold yellow]Approval needed[/] ({d.risk}): {escape(d.reason)}")
        self.console.print(f"  {escape(request.summary)}")
        choices = ["o", "d"]
        label = "[o] allow once"
        if d.grant is not None:
            label += f"  [t] allow for this task: {escape(d.grant.describe())}"
            choices.insert(1, "t")
        self.console.print(f"  {label}  [d] deny")
        try:
            pick = Prompt.ask("  choice", choices=choices, default="d", console=self.console)
        except EOFError:
            pick = "d"
        return {"o": "once", "t": "task"}.get(pick, "deny")  # type: ignore[return-value]
