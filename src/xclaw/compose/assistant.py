"""The assistant face, assembled: what ``xclaw serve`` gives every gateway session's agent.

    assistant = build_assistant(config, root, Overrides(memory=True), store=store)
    gateway = Gateway(assistant.make_agent, store, workdir=root, ...)

Plugins and skills, MCP servers' tools and long-term memory are loaded once per process,
started and stopped with the app (``assistant.runtime.router()``); the model, limits,
sandbox plan and store are the configuration's. Each session gets its own copy of the tool
registry (so one session's browser or MCP binding never reaches another) and its own
recall/extraction state over the one shared memory store.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xclaw.compose.agents import session_team
from xclaw.compose.coding import coding_tools, face_model, memory_for, with_memory
from xclaw.compose.sandbox import SandboxPlan, plan_sandbox
from xclaw.compose.settings import Overrides, limits_for
from xclaw.core.extras import require
from xclaw.core.hooks import Hooks
from xclaw.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from fastapi import APIRouter, FastAPI

    from xclaw.coding.agent import Agent
    from xclaw.config import XclawConfig
    from xclaw.core.events import EventBus
    from xclaw.core.model import Model
    from xclaw.core.origin import SessionOrigin
    from xclaw.core.tooling import Approver
    from xclaw.memory.base import MemoryStore
    from xclaw.memory.runtime import MemoryRuntime
    from xclaw.obs.tracing import Tracing
    from xclaw.plugins.extensions import Extensions
    from xclaw.store.base import Store

__all__ = ["Assistant", "AssistantRuntime", "SessionExtras", "build_assistant", "observed"]

log = logging.getLogger("xclaw.serve")
AgentFactory = Callable[["EventBus", "Approver", "SessionOrigin"], "Agent"]


@dataclass(slots=True)
class SessionExtras:
    """The registry, hooks, prompt and window reserve one session's agent is built with."""

    registry: ToolRegistry
    hooks: Hooks
    system_prompt: str
    prompt_reserve: int = 0
    memory: MemoryRuntime | None = None


@dataclass(slots=True)
class AssistantRuntime:
    """What lives as long as the gateway process: plugins and skills, MCP tools, memory."""

    root: Path
    config: XclawConfig
    extensions: Extensions
    memory_store: MemoryStore | None = None
    mcp_tools: list[str] = field(default_factory=list)

    def for_session(
        self, model: Model, base_prompt: str, session_id: str | None = None
    ) -> SessionExtras:
        """One session's registry, hooks and prompt; ``session_id`` gives its memory a
        session scope (the gateway's factory does not know it yet: None)."""
        registry = ToolRegistry(list(self.extensions.registry))
        memory = None
        if self.memory_store is not None:
            memory = memory_for(
                self.config, self.root, model, session_id=session_id, store=self.memory_store
            )
        hooks, reserve = with_memory(registry, self.extensions.hooks, memory)
        return SessionExtras(
            registry, hooks, self.extensions.system_prompt(base_prompt), reserve, memory
        )

    def router(self) -> APIRouter:
        """Mounted by ``create_app``: its lifespan starts plugin services and MCP servers
        before the first session and stops them (and closes memory) at shutdown."""
        from fastapi import APIRouter

        @contextlib.asynccontextmanager
        async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
            hub = await self._start_mcp()
            await self.extensions.start()
            try:
                yield
            finally:
                await self.extensions.stop()
                if hub is not None:
                    await hub.aclose()
                if self.memory_store is not None:
                    self.memory_store.close()

        return APIRouter(lifespan=lifespan)

    async def _start_mcp(self) -> Any:
        section = self.config.mcp
        if not section:
            return None
        from xclaw.core.errors import XclawError

        try:
            require("mcp", "the MCP servers of xclaw.yaml (mcp:)")
            from xclaw.mcp.runtime import McpHub

            hub = McpHub.from_config(self.root, section)
        except XclawError as err:
            log.warning("no MCP servers: %s", err)
            return None
        from xclaw.mcp.runtime import register_mcp_tools

        def warn(text: str) -> None:
            log.warning("mcp: %s", text)

        # the same guard as `xclaw run`: a name or wire name already taken is left out
        self.mcp_tools.extend(
            register_mcp_tools(self.extensions.registry, await hub.tools(warn), warn)
        )
        return hub


def assistant_runtime(root: Path, config: XclawConfig, *, memory: bool) -> AssistantRuntime:
    """Plugins and skills of ``root`` over the coding tools, and the memory store when on."""
    from xclaw.plugins.extensions import load_extensions

    extensions = load_extensions(root, coding_tools(config))
    for problem in extensions.problems():
        log.warning("%s", problem)
    store = None
    if memory:
        require("memory", "long-term memory (serve's --memory, on by default; or --no-memory)")
        from xclaw.memory.runtime import warm_up_in_background
        from xclaw.memory.settings import open_memory_store

        store = open_memory_store(config)
        if store.count():  # with memories, the first recall needs the embedding model
            warm_up_in_background(store)
    return AssistantRuntime(root, config, extensions, store)


@dataclass(slots=True)
class Assistant:
    """What ``xclaw serve`` runs: each session's agent, the process's runtime, the sandbox
    plan (shared with chronos), tracing."""

    make_agent: AgentFactory
    runtime: AssistantRuntime
    sandbox: SandboxPlan
    tracing: Tracing | None


def build_assistant(
    config: XclawConfig, root: Path, overrides: Overrides, *, store: Store
) -> Assistant:
    """The gateway's sessions on ``root``: the configured (or ``--model``) model, checked
    now so a bad spec fails at start, not at the first message; ``overrides.memory`` turns
    long-term memory on."""
    face_model(config, root, overrides)  # a bad spec or a missing key fails now
    sandbox = plan_sandbox(config, overrides.sandbox)
    runtime = assistant_runtime(root, config, memory=overrides.memory)
    factory, tracing = observed(session_factory(runtime, overrides, store, sandbox), config)
    return Assistant(factory, runtime, sandbox, tracing)


def session_factory(
    runtime: AssistantRuntime, overrides: Overrides, store: Store, sandbox: SandboxPlan
) -> AgentFactory:
    """Each gateway session's agent, with the process's plugins, skills, MCP tools and
    memory; the gateway gives it its bus and its approver."""
    from xclaw.coding.agent import Agent
    from xclaw.coding.prompt import SYSTEM_PROMPT

    config, root = runtime.config, runtime.root
    limits = limits_for(config, overrides)

    def make(bus: EventBus, approver: Approver, origin: SessionOrigin) -> Agent:
        model, chosen = face_model(config, root, overrides)
        extras = runtime.for_session(model, SYSTEM_PROMPT)
        serve_team = session_team(
            config,
            root,
            overrides,
            store=store,
            model=(model, chosen),
            bus=bus,
            approver=approver,
            sandbox=sandbox,
        )
        if serve_team is not None:  # the seed's orchestrator: the assistant with team tools
            for t in serve_team.team.tools():
                extras.registry.register(t)
            extras.system_prompt = f"{extras.system_prompt}\n\n{serve_team.team.prompt()}"
        settings: dict[str, Any] = {
            "tools": extras.registry,
            "approval": approver,
            "limits": limits,
            "hooks": extras.hooks,
            "bus": bus,
            "store": store,
            "system_prompt": extras.system_prompt,
            "model_spec": chosen,
            "model_protocol": overrides.protocol,
            "sandbox": sandbox,
            "prompt_reserve": extras.prompt_reserve,
        }
        if serve_team is not None and serve_team.router is not None:
            from xclaw.agents.session_routing import SessionRouting
            from xclaw.compose.routing import RoutingAgent

            routing = SessionRouting(
                serve_team.team, serve_team.router, channel=origin.channel, peer=origin.peer
            )
            return RoutingAgent(model, root, routing=routing, **settings)
        return Agent(model, root, **settings)

    return make


def observed(factory: AgentFactory, config: XclawConfig) -> tuple[AgentFactory, Tracing | None]:
    """``factory`` with tracing attached when ``observability`` (or the OTLP variable) asks."""
    from xclaw.obs.wanted import TRACING_FEATURE, tracing_wanted

    if not tracing_wanted(config.observability):
        return factory, None  # the OpenTelemetry SDK is not even imported
    require("observability", TRACING_FEATURE)
    from xclaw.obs.tracing import Tracing
    from xclaw.obs.wiring import observing

    tracing = Tracing.from_config(config.observability)
    return (factory, None) if tracing is None else (observing(factory, tracing.attach), tracing)
