"""Dataset commands (``setup`` and command assertions) run as ``terminal.exec`` runs a
model's: validated, judged by the policy, approved by the case's approver, in the sandbox.

The dataset is the user's file, yet a shared dataset is someone else's code: it gets no more
than a model would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xclaw.core.dispatch import run_tool_calls
from xclaw.core.events import EventBus
from xclaw.core.limits import Limits
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.sandbox import Sandbox
from xclaw.core.state import RunState
from xclaw.core.tooling import Approver, Policy, Toolbox
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.base import Workspace
from xclaw.tools.exec import exec_tools
from xclaw.tools.registry import ToolRegistry


@dataclass(slots=True)
class _CommandDeps:
    toolbox: Toolbox
    policy: Policy
    approver: Approver
    bus: EventBus = field(default_factory=EventBus)
    limits: Limits = field(default_factory=Limits)


async def run_command(
    root: Path,
    argv: list[str],
    *,
    approver: Approver,
    sandbox: Sandbox | None,
    output_dir: Path | None,
    cwd: str = ".",
    timeout_s: float = 120.0,
) -> ToolResult:
    """Run ``argv`` in ``root`` through policy, approval and ``terminal.exec``."""
    workspace = Workspace(root, output_dir=output_dir, sandbox=sandbox)
    deps = _CommandDeps(
        ToolRegistry(exec_tools()).bind(workspace), PolicyEngine(workspace), approver
    )
    state = RunState("eval-command", "dataset command", [])
    arguments = {
        "program": argv[0],
        "argv": argv[1:],
        "cwd": cwd,
        "timeout_ms": max(100, int(timeout_s * 1000)),
    }
    try:
        records = await run_tool_calls(
            state, deps, [ToolCallPart("eval_cmd", "terminal.exec", arguments)]
        )
    finally:
        await workspace.close()
    return records[0].result


def describe_failure(argv: list[str], result: ToolResult) -> str:
    """One sentence for a failed command: its code, message and the end of its output."""
    data = result.data or {}
    tail = (str(data.get("stderr") or "") or str(data.get("stdout") or "")).strip()
    tail = tail[-600:]
    line = " ".join(argv)
    text = f"`{line}`: {result.error_code}: {result.message}"
    return f"{text}\n{tail}" if tail else text
