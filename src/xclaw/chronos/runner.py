"""Each fire is one durable agent session in CHRONOS MODE.

The run gets the coding tools plus ``notify``, its own step limit, and an approver that
denies every request (nobody is there to ask) and reports each denial in the outcome. A run
cut off by a stop or a crash is continued with ``Agent.resume`` on the same session id; a
call with side effects that was cut off mid-way is skipped, never run again unattended.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, Protocol

from xclaw.chronos.notify import Notice, Notifier
from xclaw.chronos.prompt import chronos_system_prompt
from xclaw.coding.agent import Agent
from xclaw.compose.coding import CodingFace, Surface, build_coding
from xclaw.config import XclawConfig
from xclaw.core.errors import EndRun
from xclaw.core.events import Event, EventBus
from xclaw.core.hooks import Hooks
from xclaw.core.limits import Limits
from xclaw.core.messages import ToolResult
from xclaw.core.model import Model
from xclaw.core.sandbox import SandboxSource
from xclaw.core.state import RunControl, RunResult, RunState, ToolCallRecord
from xclaw.core.tooling import NO_ACCESS, Answer, ApprovalRequest, Risk
from xclaw.store.base import Store
from xclaw.tools.base import Tool, tool

__all__ = ["AgentRunner", "JobRunner", "RunOutcome", "RunRequest", "notify_tool"]

ModelFactory = Callable[[str | None, Path], Model]


@dataclass(frozen=True, slots=True)
class RunRequest:
    job_id: str  # a job id, or hook:NAME / sub:N for event runs
    session_id: str
    task: str
    directory: Path
    model: str | None = None
    max_steps: int = 15
    channel: str | None = None  # default notify target


@dataclass(frozen=True, slots=True)
class RunOutcome:
    status: Literal["completed", "interrupted", "failed"]
    reply: str = ""
    reason: str = ""
    denied: tuple[str, ...] = ()

    def summary(self) -> str:
        parts = [self.reason] if self.reason else []
        if self.denied:
            parts.append(f"{len(self.denied)} approval(s) denied: " + "; ".join(self.denied))
        return " | ".join(parts)


class JobRunner(Protocol):
    async def start(self, request: RunRequest, control: RunControl) -> RunOutcome: ...

    async def resume(self, request: RunRequest, control: RunControl) -> RunOutcome: ...


class UnattendedApprover:
    """Denies every approval request and reports it (event + outcome)."""

    def __init__(self, bus: EventBus, session_id: str, source: str) -> None:
        self.bus = bus
        self.session_id = session_id
        self.source = source
        self.denied: list[str] = []

    async def approve(self, request: ApprovalRequest) -> Answer:
        reason = request.decision.reason or request.decision.code or "needs approval"
        self.denied.append(f"{request.tool} ({reason})")
        payload = {"source": self.source, "tool": request.tool, "reason": reason}
        self.bus.emit(Event("approval.denied", self.session_id, 0, payload))
        return "deny"


def step_cap(max_steps: int) -> Callable[[RunState, list[ToolCallRecord]], None]:
    """End the run once it made ``max_steps`` tool calls (CHRONOS MODE's hard limit)."""

    def check(state: RunState, _records: list[ToolCallRecord]) -> None:
        made = len(state.all_records())
        if made >= max_steps:
            raise EndRun(f"made {made} tool calls, the limit is {max_steps}", code="LIMIT_STEPS")

    return check


def notify_tool(notifier: Notifier, default_target: str | None, source: str, session: str) -> Tool:
    @tool("notify", risk=Risk.WRITE, read_only=False, timeout_s=300.0, access=lambda _a: NO_ACCESS)
    async def notify(
        title: str,
        message: str,
        level: Literal["INFO", "WARNING", "CRITICAL"] = "WARNING",
        target: str | None = None,
    ) -> ToolResult:
        """Send an alert to a configured notification target. Only for a real anomaly.

        Args:
            title: A short description of the problem.
            message: The details: the data, the impact, the suggested action.
            level: INFO, WARNING or CRITICAL.
            target: A configured target name; empty for the job's own target.
        """
        name = target or default_target
        if not name:
            return ToolResult.failure(
                "NOTIFY_NO_TARGET",
                "This run has no notification target.",
                hint="Name a target configured under chronos.targets.",
                data={"targets": sorted(notifier.targets)},
            )
        receipt = await notifier.notify(name, Notice(title, message, level, source, session))
        if receipt.ok:
            return ToolResult.success(f"notified via {name}", attempts=receipt.attempts)
        return ToolResult.failure(
            "NOTIFY_FAILED",
            f"The notification to {name} failed after {receipt.attempts} attempt(s): "
            f"{receipt.error}. It was kept in the dead-letter log.",
            hint="Do not retry; finish with a short report.",
        )

    return notify


@dataclass
class AgentRunner:
    """Runs requests as coding agents with a durable ``store``."""

    store: Store
    notifier: Notifier
    model_for: ModelFactory
    bus: EventBus = field(default_factory=EventBus)
    sandbox: SandboxSource = None
    config: XclawConfig = field(default_factory=XclawConfig)  # the service's, resolved once

    def _agent(self, request: RunRequest, approver: UnattendedApprover) -> Agent:
        notify = notify_tool(self.notifier, request.channel, request.job_id, request.session_id)
        run_bus = EventBus()  # one per run: the session recorder listens to it

        def forward(event: Event) -> None:  # tagged, so subscriptions can filter by job
            if "source" not in event.payload:
                event = replace(event, payload={**event.payload, "source": request.job_id})
            self.bus.emit(event)

        run_bus.subscribe(forward)
        face = CodingFace(  # CHRONOS MODE: the coding tools and notify, nobody to ask
            extra_tools=(notify,),
            hooks=Hooks(after_tools=[step_cap(request.max_steps)]),
            system_prompt=chronos_system_prompt(request.max_steps),
            evidence_gate=False,
            # The step cap ends the run; the turn limit only backs it up (a turn may be text).
            limits=Limits(max_turns=request.max_steps * 2 + 2),
            plugins=False,
            mcp=False,
        )
        return build_coding(
            self.config,
            request.directory,
            model=self.model_for(request.model, request.directory),
            model_spec=request.model,
            surface=Surface(approver=approver, bus=run_bus, store=self.store, observe=False),
            face=face,
            sandbox=self.sandbox,
        ).agent

    async def start(self, request: RunRequest, control: RunControl) -> RunOutcome:
        approver = UnattendedApprover(self.bus, request.session_id, request.job_id)
        agent = self._agent(request, approver)
        result = await agent.run(request.task, control=control, session_id=request.session_id)
        return _outcome(result, approver)

    async def resume(self, request: RunRequest, control: RunControl) -> RunOutcome:
        session = self.store.get_session(request.session_id)
        if session is None:  # the fire was recorded, its run never began
            return await self.start(request, control)
        if session.state == "success":  # finished just before the crash that hid it
            return RunOutcome("completed", reason="finished before the restart")
        approver = UnattendedApprover(self.bus, request.session_id, request.job_id)
        agent = self._agent(request, approver)
        result = await agent.resume(request.session_id, control=control, interrupted="skip")
        return _outcome(result, approver)


def _outcome(result: RunResult, approver: UnattendedApprover) -> RunOutcome:
    status = "failed" if result.status == "running" else result.status  # never returned
    return RunOutcome(status, result.reply, result.reason, tuple(approver.denied))
