"""The terminal approver: the three answers, key letters shown, fail closed on EOF."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from xclaw.cli.approve import ConsoleApprover
from xclaw.core.tooling import ApprovalRequest, Decision, Grant, Risk

REQUEST = ApprovalRequest(
    "terminal.exec",
    "terminal.exec program='rm' argv=['-rf', 'build']",
    Decision(
        "ask",
        Risk.DESTRUCTIVE,
        "recursive delete",
        "COMMAND_NEEDS_APPROVAL",
        Grant("command", "rm"),
    ),
)


@pytest.mark.parametrize(
    ("typed", "answer"),
    [("o\n", "once"), ("t\n", "task"), ("d\n", "deny"), ("\n", "deny"), ("", "deny")],
)
async def test_answers(monkeypatch: pytest.MonkeyPatch, typed: str, answer: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    assert await ConsoleApprover(console).approve(REQUEST) == answer
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "[o] allow once" in shown and "[t] allow for this task: the command rm" in shown
    assert "[d] deny" in shown and "recursive delete" in shown
