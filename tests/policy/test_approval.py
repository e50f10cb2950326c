"""Approvers and the coded results a refused call feeds back to the model."""

from __future__ import annotations

import pytest

from xclaw.core.tooling import Answer, ApprovalRequest, Approver, Decision, Grant, Risk
from xclaw.policy.approval import (
    APPROVAL_DENIED,
    CallbackApprover,
    ModeApprover,
    approval_denied_result,
    policy_denied_result,
    summarize_request,
)

ASK = Decision(
    "ask",
    Risk.EXTERNAL,
    "git push sends commits to another machine: git push origin main",
    code="COMMAND_NEEDS_APPROVAL",
    grant=Grant("command", "git push"),
)
REQUEST = ApprovalRequest("terminal.exec", "terminal.exec program='git'", ASK)


async def test_mode_approver_answers_by_mode() -> None:
    allow: Approver = ModeApprover("allow")
    assert await allow.approve(REQUEST) == "once"
    assert await ModeApprover("deny").approve(REQUEST) == "deny"


def test_mode_approver_rejects_unknown_modes() -> None:
    with pytest.raises(ValueError, match="approval mode"):
        ModeApprover("yes")  # type: ignore[arg-type]


async def test_callback_approver_passes_the_request_and_answer() -> None:
    seen: list[ApprovalRequest] = []

    def prompt(req: ApprovalRequest) -> Answer:
        seen.append(req)
        return "task"

    assert await CallbackApprover(prompt).approve(REQUEST) == "task"
    assert seen == [REQUEST]


@pytest.mark.parametrize("answer", ["once", "task", "deny"])
async def test_callback_approver_keeps_valid_answers(answer: Answer) -> None:
    assert await CallbackApprover(lambda _r: answer).approve(REQUEST) == answer


async def test_callback_approver_fails_closed() -> None:
    def confused(_req: ApprovalRequest) -> Answer:
        return "yes"  # type: ignore[return-value]

    assert await CallbackApprover(confused).approve(REQUEST) == "deny"

    def closed(_req: ApprovalRequest) -> Answer:
        raise EOFError

    assert await CallbackApprover(closed).approve(REQUEST) == "deny"


async def test_callback_approver_lets_ctrl_c_through() -> None:
    def interrupted(_req: ApprovalRequest) -> Answer:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await CallbackApprover(interrupted).approve(REQUEST)


def test_summary_names_tool_risk_reason_and_grant() -> None:
    text = summarize_request(REQUEST)
    first, second = text.split("\n")
    assert first.startswith("terminal.exec needs approval [external]: git push sends")
    assert "call: terminal.exec program='git'" in second
    assert "allow for task would allow the command git push" in second


def test_summary_lists_targets_and_says_when_no_task_grant_exists() -> None:
    reason = "reads /etc/hostname, outside the project"
    d = Decision("ask", Risk.SENSITIVE, reason, targets=("/etc/hostname",))
    text = summarize_request(ApprovalRequest("fs.read", "fs.read path='/etc/hostname'", d))
    assert "[sensitive]" in text
    assert "targets: /etc/hostname" in text
    assert "not offered" in text
    assert len(text.splitlines()) == 2


def test_summary_clips_long_lines() -> None:
    d = Decision("ask", Risk.DESTRUCTIVE, "inline code: " + "x" * 5000)
    text = summarize_request(ApprovalRequest("terminal.exec", "s", d))
    assert all(len(line) <= 250 for line in text.splitlines())
    assert "…" in text


def test_approval_denied_result_is_coded_with_a_next_step() -> None:
    result = approval_denied_result(ASK)
    assert not result.ok
    assert result.error_code == APPROVAL_DENIED == "APPROVAL_DENIED"
    assert "git push" in result.message and "Nothing ran" in result.message
    assert result.hint
    assert result.data == {"policy_code": "COMMAND_NEEDS_APPROVAL", "risk": "external"}


@pytest.mark.parametrize(
    ("code", "hint_word"),
    [
        ("PATH_SYMLINK_ESCAPE", "symlink"),
        ("PATH_SPECIAL", "regular"),
        ("PATH_INVALID", "relative"),
        ("", "another approach"),
    ],
)
def test_policy_denied_result_keeps_the_code(code: str, hint_word: str) -> None:
    d = Decision("deny", Risk.SENSITIVE, "'link' leads outside the root", code=code)
    result = policy_denied_result(d)
    assert not result.ok
    assert result.error_code == (code or "POLICY_DENIED")
    assert "'link' leads outside the root" in result.message
    assert hint_word in result.hint
