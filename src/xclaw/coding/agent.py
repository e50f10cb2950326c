"""``Agent``: settings for the coding face. Each ``run`` builds its own state and tools."""

from __future__ import annotations

import asyncio
import inspect
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from xclaw.coding.gate import evidence_gate
from xclaw.coding.prompt import SYSTEM_PROMPT, task_message
from xclaw.coding.toolset import coding_registry
from xclaw.core.errors import ConfigError
from xclaw.core.events import EventBus
from xclaw.core.hooks import Hooks
from xclaw.core.limits import Limits
from xclaw.core.loop import LoopDeps, run_loop
from xclaw.core.messages import Message
from xclaw.core.model import Model
from xclaw.core.state import RunControl, RunResult, RunState
from xclaw.core.tooling import Approver
from xclaw.dirs import run_output_dir
from xclaw.policy.approval import ModeApprover
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.base import Tool, Workspace
from xclaw.tools.registry import ToolRegistry

KeepProcesses = Callable[[list[dict[str, Any]]], bool | Awaitable[bool]]


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


class Agent:
    """A coding agent: a model, a project root, tools, a policy and an approver."""

    def __init__(
        self,
        model: Model,
        workdir: str | Path,
        tools: ToolRegistry | Iterable[Tool] | None = None,
        *,
        approval: Literal["deny", "allow"] | Approver = "deny",
        limits: Limits | None = None,
        hooks: Hooks | None = None,
        bus: EventBus | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        evidence_gate_enabled: bool = True,
        keep_processes: KeepProcesses | None = None,
    ) -> None:
        root = Path(workdir).expanduser()
        if not root.is_dir():
            raise ConfigError(
                f"Project directory {root} does not exist.",
                hint="Create it or pass an existing directory with -C.",
            )
        self.model = model
        self.workdir = root.resolve()
        if tools is None:
            self.registry = coding_registry()
        elif isinstance(tools, ToolRegistry):
            self.registry = tools
        else:
            self.registry = ToolRegistry(tools)
        self.approver: Approver = ModeApprover(approval) if isinstance(approval, str) else approval
        self.limits = limits or Limits()
        gate = Hooks(completion_gate=[evidence_gate]) if evidence_gate_enabled else Hooks()
        self.hooks = gate.merged(hooks) if hooks else gate
        self.bus = bus or EventBus()
        self.system_prompt = system_prompt
        self.keep_processes = keep_processes

    async def run(
        self, task: str, *, control: RunControl | None = None, session_id: str | None = None
    ) -> RunResult:
        sid = session_id or new_session_id()
        workspace = Workspace(self.workdir, output_dir=run_output_dir(sid))
        state = RunState(
            sid,
            task,
            [Message.system(self.system_prompt), Message.user(task_message(task, self.workdir))],
            control=control or RunControl(),
        )
        state.control.attach(asyncio.current_task())
        deps = LoopDeps(
            self.model,
            self.registry.bind(workspace),
            PolicyEngine(workspace),
            self.approver,
            self.bus,
            self.limits,
            self.hooks,
        )
        try:
            result = await run_loop(state, deps)
        finally:
            state.control.attach(None)
            kept = await self._settle_processes(workspace)
        return replace(result, changed_files=list(workspace.changed_files), kept_processes=kept)

    def run_sync(self, task: str, **kwargs: Any) -> RunResult:
        return asyncio.run(self.run(task, **kwargs))

    async def _settle_processes(self, workspace: Workspace) -> list[dict[str, Any]]:
        """Stop what the run started, unless the user chose to keep it running."""
        manager = workspace.processes
        if manager is None:
            return []
        running = [p for p in manager.list() if p.get("status") == "running"]
        if not running:
            return []
        keep = False
        if self.keep_processes is not None:
            answer = self.keep_processes(running)
            keep = bool(await answer) if inspect.isawaitable(answer) else bool(answer)
        if keep:
            manager.detach_all()
            return running
        await manager.stop_all()
        return []
