"""Approval on the terminal: allow once, allow for task (a narrow rule), or deny."""

from __future__ import annotations

import signal

from rich.console import Console
from rich.markup import escape
from rich.prompt import Prompt

from xclaw.core.tooling import Answer, ApprovalRequest
from xclaw.policy.approval import summarize_request
from xclaw.redact import redact


class ConsoleApprover:
    """Prompts on the loop's thread (the run waits for the answer anyway).

    While the prompt is open, Ctrl+C raises KeyboardInterrupt again instead of going to the
    run's pause handler, and counts as *deny*: fail closed.
    """

    def __init__(self, console: Console) -> None:
        self.console = console

    async def approve(self, request: ApprovalRequest) -> Answer:
        previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            return self._ask(request)
        except (KeyboardInterrupt, EOFError):
            self.console.print("  [red]denied[/]")
            return "deny"
        finally:
            signal.signal(signal.SIGINT, previous)

    def _ask(self, request: ApprovalRequest) -> Answer:
        d = request.decision
        self.console.print(
            f"[bold yellow]Approval needed[/] {escape(redact(summarize_request(request)))}"
        )
        choices = ["o", "d"]
        label = "\\[o] allow once"
        if d.grant is not None:
            label += f"  \\[t] allow for this task: {escape(d.grant.describe())}"
            choices.insert(1, "t")
        self.console.print(f"  {label}  \\[d] deny")
        pick = Prompt.ask("  choice", choices=choices, default="d", console=self.console)
        return {"o": "once", "t": "task"}.get(pick, "deny")  # type: ignore[return-value]
