"""The coding face, assembled: what ``xclaw run``/``resume``, eval, chronos and the Python API
(``xclaw.build_agent``) run.

    runtime = build_coding(config, directory, Overrides(memory=True), surface=Surface(...))
    async with runtime:                  # plugin services; memory drained and closed after
        result = await runtime.run(task)  # the MCP servers' tools for the run

The chain: model (``--model`` or ``model:``) → limits (``limits:`` and ``--max-turns``) →
approver → sandbox plan → the face's tools, then plugins and skills (``plugins.*``) → memory
(``--memory``) → store (``store:``) → tracing (``observability:`` or ``--trace``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xclaw.compose.sandbox import plan_sandbox
from xclaw.compose.settings import Overrides, approval_mode, limits_for, mode_approver
from xclaw.config import XclawConfig
from xclaw.core.extras import require

if TYPE_CHECKING:
    from xclaw.browser.session import BrowserSession
    from xclaw.coding.agent import Agent, KeepProcesses
    from xclaw.core.events import EventBus
    from xclaw.core.hooks import Hooks
    from xclaw.core.limits import Limits
    from xclaw.core.model import Model
    from xclaw.core.resume import InterruptedChoice
    from xclaw.core.sandbox import Sandbox, SandboxFactory, SandboxSource
    from xclaw.core.state import RunControl, RunResult
    from xclaw.core.tooling import Approver
    from xclaw.memory.runtime import MemoryRuntime
    from xclaw.obs.tracing import Tracing
    from xclaw.plugins.extensions import Extensions
    from xclaw.store.base import Store
    from xclaw.tools.base import Tool
    from xclaw.tools.registry import ToolRegistry

__all__ = [
    "CodingFace",
    "CodingRuntime",
    "Surface",
    "build_agent",
    "build_coding",
    "coding_tools",
    "face_model",
    "memory_for",
    "open_configured_store",
]

_log = logging.getLogger("xclaw.compose")
Warn = Callable[[str], None]


def _log_warning(text: str) -> None:
    _log.warning("%s", text)


@dataclass(frozen=True, slots=True)
class Surface:
    """What the calling surface supplies: who approves, who listens, where sessions go."""

    approver: Approver | None = None  # None: the approval mode, without a person to ask
    bus: EventBus | None = None
    store: Store | None = None  # None: the configured store (unless ``durable`` is off)
    durable: bool = True  # False: no store (a run that cannot be resumed)
    keep_processes: KeepProcesses | None = None
    warn: Warn = _log_warning  # failed plugins, MCP servers that did not start
    observe: bool = True  # tracing when ``observability:`` (or ``--trace``) asks


@dataclass(frozen=True, slots=True)
class CodingFace:
    """How a surface adapts the coding face (chronos, eval): tools, hooks, prompt, limits."""

    extra_tools: tuple[Tool, ...] = ()
    hooks: Hooks | None = None
    system_prompt: str | None = None  # default: the coding prompt
    evidence_gate: bool = True
    limits: Limits | None = None  # replaces ``limits:`` of the configuration
    plugins: bool = True  # plugins and skills (off: the face's tools only)
    mcp: bool = True  # the configured MCP servers' tools for each run


def face_model(config: XclawConfig, directory: Path, overrides: Overrides) -> tuple[Model, str]:
    """``--model`` (or ``model:``) resolved with the configuration's ``models:`` settings."""
    from xclaw.core.errors import ConfigError
    from xclaw.models.resolve import MODEL_HELP, resolve_model

    chosen = overrides.model or config.model
    if not chosen:
        raise ConfigError("No model is configured.", code="MODEL_NOT_CONFIGURED", hint=MODEL_HELP)
    model = resolve_model(
        chosen,
        base_url=overrides.base_url,
        project=directory,
        protocol=overrides.protocol,
        model_settings=config.models,
    )
    return model, chosen


def coding_tools(config: XclawConfig, browser: BrowserSession | None = None) -> ToolRegistry:
    """The coding tools; with a browser session, the ``browser.*`` tools on it too."""
    from xclaw.coding.toolset import coding_registry

    return coding_registry(browser, allow_hosts=config.browsing.allow_hosts)


def open_configured_store(config: XclawConfig) -> Store:
    """The session store ``store:`` (or ``XCLAW_DATABASE_URL``) names."""
    from xclaw.store.open import open_store

    return open_store(config=config)


def memory_for(
    config: XclawConfig,
    directory: Path,
    model: Model,
    *,
    session_id: str | None = None,
    store: Any = None,
) -> MemoryRuntime:
    """Long-term memory of one run or gateway session. ``session_id`` is where a session
    scope enters the memory runtime (None: user and project scopes only)."""
    require("memory", "long-term memory (--memory)")
    from xclaw.memory.runtime import default_scopes, open_memory

    scopes = default_scopes(directory, session_id)
    if store is None:
        return open_memory(config, scopes, model=model)
    return open_memory(config, scopes, model=model, store=store, warm_up=False)


def with_memory(
    registry: ToolRegistry, hooks: Hooks, memory: MemoryRuntime | None
) -> tuple[Hooks, int]:
    """``memory``'s tools in ``registry`` (a tool already there wins), its hooks after
    ``hooks``; returns the hooks and the prompt tokens recall may add."""
    if memory is None:
        return hooks, 0
    for t in memory.tools():
        if registry.get(t.name) is None:
            registry.register(t)
    return hooks.merged(memory.hooks()), memory.reserve_tokens


@dataclass
class CodingRuntime:
    """An assembled coding agent and what lives as long as it does."""

    agent: Agent
    config: XclawConfig
    sandbox: Sandbox | SandboxFactory  # each run's (a plan: a new one per run)
    extensions: Extensions | None = None
    memory: MemoryRuntime | None = None
    tracing: Tracing | None = None
    browser: BrowserSession | None = None
    face: CodingFace = field(default_factory=CodingFace)
    warn: Warn = _log_warning
    _started: bool = False

    async def __aenter__(self) -> CodingRuntime:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start the plugins' services (failed plugins are warned about, and left out)."""
        if self._started or self.extensions is None:
            return
        for line in self.extensions.problems():
            self.warn(line)
        await self.extensions.start()
        self._started = True

    async def aclose(self) -> None:
        """Stop the services; drain and close memory, the browser, the model, tracing."""
        try:
            if self._started and self.extensions is not None:
                self._started = False
                await self.extensions.stop()
        finally:
            if self.memory is not None:  # facts still being extracted get their timeout
                await self.memory.drain(self.memory.config.extract.timeout_s)
                self.memory.close()
            if self.browser is not None:  # the session's context (cookies), then Chromium
                await self.browser.close()
                await self.browser.pool.close()
            await self.agent.model.aclose()
            if self.tracing is not None:
                self.tracing.shutdown()  # the spans still batched go out

    async def run(
        self, task: str, *, control: RunControl | None = None, session_id: str | None = None
    ) -> RunResult:
        """One run of the task (the services started first unless already running)."""
        return await self.drive(
            lambda c: self.agent.run(task, control=c, session_id=session_id), control
        )

    async def resume(
        self,
        session_id: str,
        *,
        control: RunControl | None = None,
        interrupted: InterruptedChoice | None = None,
        fresh_context: bool = False,
    ) -> RunResult:
        return await self.drive(
            lambda c: self.agent.resume(
                session_id, control=c, interrupted=interrupted, fresh_context=fresh_context
            ),
            control,
        )

    async def drive(
        self,
        start: Callable[[RunControl], Awaitable[RunResult]],
        control: RunControl | None = None,
    ) -> RunResult:
        """``start`` with the MCP servers' tools in the registry for its duration; the
        services started (and stopped after) when nobody started them."""
        from xclaw.core.state import RunControl

        if self.face.mcp and self.config.mcp:
            require("mcp", "the MCP servers of xclaw.yaml (mcp:)")
            from xclaw.mcp.runtime import with_mcp_tools

            agent = self.agent
            start = with_mcp_tools(
                start, agent.registry, agent.workdir, self.config.mcp, warn=self.warn
            )
        chosen = control or RunControl()
        if self._started or self.extensions is None:
            return await start(chosen)
        await self.start()
        try:
            return await start(chosen)
        finally:
            self._started = False
            await self.extensions.stop()

    def run_sync(self, task: str, **kwargs: Any) -> RunResult:
        import asyncio

        async def once() -> RunResult:
            async with self:
                return await self.run(task, **kwargs)

        return asyncio.run(once())

    def describe(self) -> dict[str, Any]:
        """What was assembled, comparable across surfaces: tools, limits, plugins, memory,
        sandbox and policy (the approval mode)."""
        from dataclasses import asdict

        agent = self.agent
        plugins = [] if self.extensions is None else self.extensions.plugins
        return {
            "tools": sorted(agent.registry.names()),
            "limits": asdict(agent.limits),
            "plugins": sorted(f"{p.id}:{p.state}" for p in plugins),
            "memory": None if self.memory is None else _memory_summary(self.memory, agent),
            "sandbox": getattr(self.sandbox, "mode", "given"),
            "policy": {
                "approver": type(agent.approver).__name__,
                "mode": getattr(agent.approver, "mode", "ask"),
                "evidence_gate": self.face.evidence_gate,
            },
            "model": agent.model_spec,
            "system_prompt": agent.system_prompt,
        }


def _memory_summary(memory: MemoryRuntime, agent: Agent) -> dict[str, Any]:
    return {
        "scopes": [f"{s.kind}:{s.id}" for s in memory.scopes.visible],
        "recall": memory.recall is not None,
        "extract": memory.extractor is not None,
        "reserve": agent.prompt_reserve,
    }


def build_coding(
    config: XclawConfig,
    directory: Path,
    overrides: Overrides | None = None,
    *,
    model: Model | None = None,
    surface: Surface | None = None,
    face: CodingFace | None = None,
    sandbox: SandboxSource = None,
    model_spec: str | None = None,
) -> CodingRuntime:
    """The coding agent of ``directory`` from the resolved ``config`` and ``overrides``.

    ``model``: a model object instead of ``--model``/``model:`` (the Python API, tests,
    ``model_spec`` saying what it was made from); ``sandbox``: a plan shared by several
    builds, a factory or one sandbox for every run (default: a plan made now)."""
    from xclaw.coding.agent import Agent
    from xclaw.coding.prompt import SYSTEM_PROMPT
    from xclaw.core.hooks import Hooks

    flags = overrides or Overrides()
    where = surface or Surface()
    shape = face or CodingFace()
    spec = model_spec
    if model is None:
        model, spec = face_model(config, directory, flags)
    plan = sandbox if sandbox is not None else plan_sandbox(config, flags.sandbox)
    registry = coding_tools(config, flags.browser)
    for t in shape.extra_tools:
        registry.register(t)
    extensions = None
    hooks = shape.hooks or Hooks()
    base_prompt = shape.system_prompt or SYSTEM_PROMPT
    prompt = base_prompt
    if shape.plugins:
        from xclaw.plugins.extensions import load_extensions

        extensions = load_extensions(directory.resolve(), registry)  # extends it in place
        hooks = hooks.merged(extensions.hooks)
        prompt = extensions.system_prompt(base_prompt)
    memory = memory_for(config, directory, model) if flags.memory else None
    hooks, reserve = with_memory(registry, hooks, memory)
    store = where.store
    if store is None and where.durable:
        store = open_configured_store(config)
    agent = Agent(
        model,
        directory,
        registry,
        hooks=hooks,
        prompt_reserve=reserve,
        system_prompt=prompt,
        approval=where.approver or mode_approver(approval_mode(config, flags)),
        limits=shape.limits or limits_for(config, flags),
        bus=where.bus,
        keep_processes=where.keep_processes,
        store=store,
        model_spec=spec,
        model_protocol=flags.protocol,
        sandbox=plan,
        evidence_gate_enabled=shape.evidence_gate,
    )
    runtime = CodingRuntime(
        agent, config, plan, extensions, memory, browser=flags.browser, face=shape, warn=where.warn
    )
    if where.observe:
        runtime.tracing = attach_tracing(agent, config, flags.trace)
    return runtime


def attach_tracing(agent: Agent, config: XclawConfig, local: str | None) -> Tracing | None:
    """Spans of ``agent``'s runs when ``--trace`` or ``observability:`` asks."""
    from xclaw.core.errors import ConfigError
    from xclaw.obs.wanted import TRACING_FEATURE, tracing_wanted

    if local not in (None, "console", "json"):
        raise ConfigError(f"Unknown --trace {local!r}.", hint="Use --trace console or json.")
    if not tracing_wanted(config.observability, local):
        return None  # the OpenTelemetry SDK is not even imported
    require("observability", TRACING_FEATURE)
    from xclaw.obs.tracing import Tracing

    tracing = Tracing.from_config(
        config.observability, "json" if local == "json" else "console" if local else None
    )
    if tracing is not None:
        tracing.attach(agent)
    return tracing


def build_agent(
    workdir: str | Path = ".",
    *,
    model: Model | str | None = None,
    config: XclawConfig | None = None,
    approval: str | Approver | None = None,
    sandbox: str | None = None,
    max_turns: int | None = None,
    memory: bool = False,
    protocol: str | None = None,
    base_url: str | None = None,
    bus: EventBus | None = None,
    store: Store | None = None,
) -> CodingRuntime:
    """The agent ``xclaw run -C workdir`` would run, for Python callers (``xclaw.build_agent``).

    The configuration (``config``, default: resolved now for ``workdir``) brings the model,
    ``limits:``, ``approval:``, the sandbox, the enabled plugins and skills, the MCP servers
    and the session store; the keyword arguments are the command's flags. ``model`` is a
    spec (``openai:gpt-4.1``) or a model object. ``approval`` "ask" has nobody to ask here:
    pass an ``Approver`` to ask someone, else it denies. Use the result as
    ``async with runtime: await runtime.run(task)`` (or ``runtime.run_sync(task)``);
    ``runtime.agent`` is the ``xclaw.Agent``."""
    from xclaw.compose.settings import resolve_config

    directory = Path(workdir).expanduser()
    resolved = config if config is not None else resolve_config(directory)
    given = model if model is not None and not isinstance(model, str) else None
    flags = Overrides(
        model=model if isinstance(model, str) else None,
        base_url=base_url,
        protocol=protocol,
        approval=approval if isinstance(approval, str) else None,
        sandbox=sandbox,
        max_turns=max_turns,
        memory=memory,
    )
    approver = None if approval is None or isinstance(approval, str) else approval
    return build_coding(
        resolved,
        directory,
        flags,
        model=given,
        surface=Surface(approver=approver, bus=bus, store=store),
    )
