"""What the tree asks of the agents it runs, and of whoever makes them.

The multi-agent face builds no agent itself: the composition root hands the orchestrator an
``AgentFactory`` (``xclaw.compose.agents.CodingAgents``: coding ``Agent``s over the coding
tools). For each run — the orchestrator's own, a child's, a worker's conversation — the tree
fills in ``AgentSettings`` (model, workspace, tools, approval, limits, hooks, bus, store,
prompt, sandbox, and the session's place in the tree) and drives the ``SessionRunner`` it
gets back. The protocol lives here, with its only consumer, since it speaks of a tool
registry and a store, abilities the contracts in ``xclaw.core`` cannot name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from xclaw.core.events import EventBus
from xclaw.core.hooks import Hooks
from xclaw.core.limits import Limits
from xclaw.core.model import Model
from xclaw.core.resume import InterruptedChoice
from xclaw.core.sandbox import SandboxSource
from xclaw.core.state import RunControl, RunResult
from xclaw.core.tooling import Approver
from xclaw.store.base import Store
from xclaw.tools.registry import ToolRegistry

__all__ = ["AgentFactory", "AgentSettings", "SessionRunner"]


class SessionRunner(Protocol):
    """One agent of the tree: a recorded session started, resumed, or sent one more message."""

    async def run(
        self, task: str, *, control: RunControl | None = None, session_id: str | None = None
    ) -> RunResult: ...

    async def resume(
        self,
        session_id: str,
        *,
        control: RunControl | None = None,
        interrupted: InterruptedChoice | None = None,
    ) -> RunResult: ...

    async def follow_up(
        self, session_id: str, text: str, *, control: RunControl | None = None
    ) -> RunResult: ...


@dataclass(slots=True)
class AgentSettings:
    """Everything one agent of the tree is made with. ``parent_session_id``, ``caller`` and
    ``meta`` are written with a new session's first row (its place in the tree)."""

    model: Model
    workdir: Path
    tools: ToolRegistry
    approver: Approver
    limits: Limits
    hooks: Hooks
    bus: EventBus
    store: Store
    system_prompt: str
    model_spec: str | None = None
    sandbox: SandboxSource = None
    parent_session_id: str | None = None
    caller: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # A worker ends by delivering and its caller judges it; the orchestrator's work is its
    # children's, each judged apart: no completion-evidence gate in the tree.
    evidence_gate: bool = False


class AgentFactory(Protocol):
    """Makes the tree's agents, and the tools their registries are picked from."""

    def agent(self, settings: AgentSettings) -> SessionRunner:
        """The agent ``settings`` describe."""
        ...

    def tools(self) -> ToolRegistry:
        """A fresh registry of the tools a worker's ``tools`` (and the orchestrator's reading
        tools) name."""
        ...
