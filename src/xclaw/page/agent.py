"""``WebAgent``: the page face (seed 002). Settings live on the agent; each ``chat()`` builds a
``PageRun`` and runs the one loop with its hooks.

    agent = WebAgent(model, page, system_prompt="Only operate the tickets UI.")
    result = await agent.chat('click "New" -> fill the title with "abc" -> save')
    result.reply, result.tool_calls, result.metrics
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from xclaw.core.events import EventBus
from xclaw.core.limits import Limits
from xclaw.core.loop import LoopDeps, run_loop
from xclaw.core.messages import Message, TextPart
from xclaw.core.model import Model
from xclaw.core.state import RunControl, RunState, RunStatus
from xclaw.core.tooling import Approver
from xclaw.page.callbacks import WebAgentCallbacks
from xclaw.page.keeper import SnapshotKeeper, SnapshotSource
from xclaw.page.metrics import AgentLoopMetrics, MetricsCollector
from xclaw.page.prompt import PromptRegistry, build_system_prompt
from xclaw.page.recovery import DEFAULT_MAX_ROUNDS, PageLoopSettings
from xclaw.page.remaining import is_done, strip_remaining
from xclaw.page.routes import RouteSkill, RouteSkills
from xclaw.page.session import PageRun, PageRunSetup
from xclaw.page.toolbox import PageToolbox
from xclaw.policy.approval import ModeApprover
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.base import Tool, Workspace

if TYPE_CHECKING:
    from playwright.async_api import Page

    from xclaw.page.driver import PageDriver
    from xclaw.page.snapshot import SnapshotOptions


@dataclass(frozen=True, slots=True)
class AgentLoopResult:
    """Seed 002's AgentLoopResult, plus how the run ended (status, reason, what was left)."""

    reply: str
    tool_calls: list[dict[str, Any]]  # {"name", "input", "result": ToolResult}, in order
    messages: list[Message]
    metrics: AgentLoopMetrics
    status: RunStatus = "completed"
    reason: str = ""
    remaining: str = ""
    done_steps: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "completed"


class WebAgent:
    """An agent that operates one live page through the five page tools."""

    def __init__(
        self,
        model: Model,
        page_or_driver: Page | PageDriver | SnapshotSource,
        *,
        system_prompt: str | Mapping[str, str] | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        memory: bool = False,
        auto_snapshot: bool = True,
        snapshot_options: SnapshotOptions | None = None,
        dry_run: bool = False,
        callbacks: WebAgentCallbacks | None = None,
        routes: Mapping[str, RouteSkill] | None = None,
        settings: PageLoopSettings | None = None,
        approval: Literal["allow", "deny"] | Approver = "deny",
        bus: EventBus | None = None,
        builtin_tools: Sequence[Tool] | None = None,
    ) -> None:
        self.model = model
        self.driver = _as_driver(page_or_driver)
        self.max_rounds = max_rounds
        self.callbacks = callbacks or WebAgentCallbacks()
        self.routes = RouteSkills(routes)
        self.settings = settings or PageLoopSettings()
        self.approver: Approver = ModeApprover(approval) if isinstance(approval, str) else approval
        self.bus = bus or EventBus()
        self._prompts = PromptRegistry(system_prompt)
        self._memory = memory
        self._history: list[Message] = []
        self._auto_snapshot = auto_snapshot
        self._snapshot_options = snapshot_options
        self._dry_run = dry_run
        self._builtin: dict[str, Tool] = {}
        self._custom: dict[str, Tool] = {}
        self._builtin_source = tuple(builtin_tools) if builtin_tools is not None else None
        self.register_tools()

    # -- tools ----------------------------------------------------------------------------
    def register_tools(self) -> None:
        """Register the five built-in tools (dom, navigate, page_info, wait, evaluate); an agent
        given ``builtin_tools`` (another driver, e.g. a content-script bridge) uses those."""
        if self._builtin_source is not None:
            tools: Sequence[Tool] = self._builtin_source
        else:
            from xclaw.page.tools import page_tools

            tools = page_tools(self.driver)
        self._builtin = {t.name: t for t in tools}

    def register_tool(self, tool: Tool) -> None:
        """Add (or replace) a custom tool; a built-in's name cannot be taken."""
        if tool.name in self._builtin:
            raise ValueError(f"{tool.name!r} is a built-in page tool and cannot be replaced")
        self._custom[tool.name] = tool

    def remove_tool(self, name: str) -> bool:
        """Remove a custom tool; built-ins are protected (False)."""
        if name in self._builtin:
            return False
        return self._custom.pop(name, None) is not None

    def has_tool(self, name: str) -> bool:
        return name in self._builtin or name in self._custom

    def get_tool_names(self) -> list[str]:
        return [*self._builtin, *self._custom]

    def clear_custom_tools(self) -> list[str]:
        names = list(self._custom)
        self._custom.clear()
        return names

    def get_tools(self) -> list[Tool]:
        return [*self._builtin.values(), *self._custom.values()]

    def current_tools(self) -> list[Tool]:
        """What the model is offered now: registered tools, then the active route's."""
        tools = self.get_tools()
        taken = {t.name for t in tools}
        return tools + [t for t in self.routes.tools() if t.name not in taken]

    # -- prompts, memory, snapshots ------------------------------------------------------------
    def set_system_prompt(self, key_or_prompt: str, prompt: str | None = None) -> None:
        self._prompts.set(key_or_prompt, prompt)

    def set_system_prompts(self, prompts: Mapping[str, str]) -> None:
        self._prompts.set_many(prompts)

    def remove_system_prompt(self, key: str) -> bool:
        return self._prompts.remove(key)

    def keep_only_system_prompt(self, key: str) -> bool:
        return self._prompts.keep_only(key)

    def clear_system_prompts(self) -> None:
        self._prompts.clear()

    def get_system_prompts(self) -> dict[str, str]:
        return self._prompts.get_all()

    def system_prompt(self) -> str:
        """The prompt the model gets now: built-in rules, registered prompts, the route's."""
        return build_system_prompt(self._prompts.get_all(), self.routes.prompt())

    def set_memory(self, enabled: bool) -> None:
        """Turning memory off also forgets the history."""
        self._memory = enabled
        if not enabled:
            self._history.clear()

    def get_memory(self) -> bool:
        return self._memory

    def clear_history(self) -> None:
        self._history.clear()

    def get_history(self) -> list[Message]:
        return list(self._history)

    def set_auto_snapshot(self, enabled: bool) -> None:
        self._auto_snapshot = enabled

    def get_auto_snapshot(self) -> bool:
        return self._auto_snapshot

    def set_snapshot_options(self, options: SnapshotOptions) -> None:
        self._snapshot_options = options

    def get_snapshot_options(self) -> SnapshotOptions:
        """The options of the first-round and loop snapshots (default: ``FIRST_ROUND``)."""
        if self._snapshot_options is None:
            from xclaw.page.snapshot import FIRST_ROUND

            return FIRST_ROUND
        return self._snapshot_options

    def set_dry_run(self, enabled: bool) -> None:
        self._dry_run = enabled

    def get_dry_run(self) -> bool:
        return self._dry_run

    def set_route_skill(self, pattern: str, skill: RouteSkill) -> None:
        self.routes.set(pattern, skill)

    def remove_route_skill(self, pattern: str) -> bool:
        return self.routes.remove(pattern)

    # -- the run ----------------------------------------------------------------------------
    async def chat(self, message: str, *, control: RunControl | None = None) -> AgentLoopResult:
        """Run the loop on ``message`` until it is done, stopped, or out of rounds.

        ``control`` lets a surface pause (first Ctrl+C) or cancel (second) the run."""
        metrics = MetricsCollector()
        keeper = SnapshotKeeper(self.driver, self._snapshot_options, metrics)
        if self._auto_snapshot:
            snap = await keeper.read()
            if snap is not None:
                self.callbacks.snapshot(snap.text)
        self.routes.reset()
        run = self._new_run(message, keeper, metrics)
        state = RunState(
            _session_id(),
            message,
            [Message.system(self.system_prompt())],
            control=control or RunControl(),
        )
        state.append(Message.user(message), "user_input")
        listeners = [self.bus.subscribe(metrics), self.bus.subscribe(self.callbacks.listener())]
        state.control.attach(asyncio.current_task())
        try:
            result = await run_loop(state, self._deps(run))
        finally:
            state.control.attach(None)
            for unsubscribe in listeners:
                unsubscribe()
        figures = metrics.build()
        self.callbacks.metrics(figures)
        reply = strip_remaining(result.reply) or result.reply
        if self._memory:
            self._remember(message, reply, run)
        return AgentLoopResult(
            reply=reply,
            tool_calls=[
                {"name": r.name, "input": r.input, "result": r.result} for r in result.tool_calls
            ],
            messages=list(result.messages),
            metrics=figures,
            status=result.status,
            reason=result.reason,
            remaining="" if is_done(run.remaining) else run.remaining,
            done_steps=list(run.done_steps),
        )

    def _new_run(self, task: str, keeper: SnapshotKeeper, metrics: MetricsCollector) -> PageRun:
        return PageRun(
            PageRunSetup(
                task=task,
                keeper=keeper,
                metrics=metrics,
                callbacks=self.callbacks,
                system_prompt=self.system_prompt,
                follow_url=lambda: self._follow_url(keeper),
                settings=self.settings,
                history=tuple(self._history),
                dry_run=self._dry_run,
            )
        )

    def _deps(self, run: PageRun) -> LoopDeps:
        workspace = Workspace(_project_root(self.driver))
        return LoopDeps(
            self.model,
            PageToolbox(self.current_tools, workspace, run),
            PolicyEngine(workspace),
            self.approver,
            self.bus,
            Limits(max_turns=self.max_rounds),
            run.hooks(),
        )

    def _follow_url(self, keeper: SnapshotKeeper) -> None:
        url = _current_url(self.driver) or keeper.url
        if url:
            self.routes.update(url)

    def _remember(self, task: str, reply: str, run: PageRun) -> None:
        done = "; ".join(run.done_steps) or "nothing"
        summary = f"{reply}\n(steps done: {done})"
        self._history += [Message.user(task), Message("assistant", (TextPart(summary),))]


def _as_driver(page_or_driver: Any) -> Any:
    from playwright.async_api import Page

    if isinstance(page_or_driver, Page):
        from xclaw.page.driver import PageDriver

        return PageDriver(page_or_driver)
    return page_or_driver


def _current_url(driver: Any) -> str:
    page = getattr(driver, "page", None)
    url = getattr(page, "url", "")
    return url if isinstance(url, str) else ""


def _project_root(driver: Any) -> Path:
    root = getattr(driver, "project_root", None)
    return Path(root) if root else Path.cwd()


def _session_id() -> str:
    return "page-" + time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
