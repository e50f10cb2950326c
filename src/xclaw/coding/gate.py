"""The completion-evidence gate of seed 000 §10, as a loop hook.

A final answer is refused, with a reminder, when the task asked for changes but no
side-effecting call succeeded, or asked for a build/test/verification that has not succeeded
since the last file change. Requirements are read from the task text (English and Chinese).
"""

from __future__ import annotations

import re

from xclaw.core.state import RunState, ToolCallRecord

_CHANGE = re.compile(
    r"\b(create|build|make|write|add|edit|fix|implement|change|update|modify|refactor|"
    r"rename|remove|delete|generate|scaffold|set ?up|install)\b"
    r"|创建|修改|修复|添加|新建|实现|编写|生成|删除",
    re.IGNORECASE,
)
_VERIFY = re.compile(
    r"\b(build|builds|test|tests|verify|verification|check|lint|compile|run the)\b"
    r"|构建|测试|验证|编译",
    re.IGNORECASE,
)
_WRITE_RISKS = {"write", "destructive"}


def task_requirements(task: str) -> tuple[bool, bool]:
    """(wants a change, wants a successful verification after it)."""
    return bool(_CHANGE.search(task)), bool(_VERIFY.search(task))


def _is_verification(rec: ToolCallRecord) -> bool:
    return rec.risk == "execute" and rec.name == "terminal.exec"


def evidence_gate(state: RunState) -> str | None:
    wants_change, wants_verify = task_requirements(state.task)
    if not (wants_change or wants_verify):
        return None  # an ordinary chat message: the session's calls need not be read
    records = state.all_records()
    if wants_change and not any(r.result.ok and not r.read_only for r in records):
        return (
            "The task asks for changes, but no tool call has changed anything successfully "
            "yet; text in a reply is never executed. Make the change by calling the tools "
            "(a tool call, not a description of one), then finish."
        )
    if not wants_verify:
        return None
    last_change = max(
        (i for i, r in enumerate(records) if r.result.ok and r.risk in _WRITE_RISKS), default=-1
    )
    verified_after = any(r.result.ok and _is_verification(r) for r in records[last_change + 1 :])
    if not verified_after:
        return (
            "The task asks for a build, test or verification, and none has succeeded since "
            "the last change. Run it with terminal.exec and fix any failure before finishing."
        )
    return None
