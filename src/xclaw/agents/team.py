"""``Orchestrator``: an agent run of the one loop whose tools delegate to workers.

Every agent of the tree — the orchestrator's own run, each child — comes from the
``AgentFactory`` the composition root gives it (``xclaw.compose.agents``: coding ``Agent``s).

Each ``run``/``resume`` builds the run's tree (its budget, semaphore and tools bound to the
parent session), so nothing about a run lives on the object. The team's settings (approval,
concurrency, budget, worker models, team name, route) are kept in the orchestrator session's
meta under ``agents``, so a resume rebuilds the same team.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xclaw.agents.budget import TreeBudget
from xclaw.agents.children import ModelFactory, TreeContext, worker_agent
from xclaw.agents.config import ApprovalMode, BudgetConfig, OnInterrupted
from xclaw.agents.factory import AgentFactory, AgentSettings, SessionRunner
from xclaw.agents.interrupted import (
    ResumeChoice,
    cut_off_calls,
    pause_tree,
    settle_choice,
)
from xclaw.agents.registry import READ_TOOLS, WorkerRegistry, WorkerSpec
from xclaw.agents.routing import Route, Router
from xclaw.agents.tools import conversation_tool, orchestrator_tools
from xclaw.core.errors import ConfigError, ToolError
from xclaw.core.events import EventBus
from xclaw.core.hooks import Hooks
from xclaw.core.limits import Limits
from xclaw.core.model import Model
from xclaw.core.resume import InterruptedChoice
from xclaw.core.sandbox import SandboxSource
from xclaw.core.state import RunControl, RunResult, new_session_id
from xclaw.core.tooling import Approver
from xclaw.models.info import model_info
from xclaw.policy.approval import ModeApprover
from xclaw.store.base import Store
from xclaw.tools.base import Tool, ToolContext
from xclaw.tools.registry import ToolRegistry

ORCHESTRATOR_PROMPT = """You coordinate a team of worker agents. You plan, split the work, \
hand it out with your tools and combine the results; workers do the work.

Tools:
- agents.delegate {worker, task}: one worker, one task.
- agents.debate {workers, question, rounds}: several workers answer in parallel; a judge decides.
- agents.pipeline {steps: [{worker, task}]}: workers in order; {{input}} in a task is the \
previous step's delivery.
- agents.open_artifact {pointer}: read a file or diff a worker delivered, when you need it.

Rules:
1. A worker sees only the task you write: make every task self-contained (paths, code, \
constraints). Pass files by their path or artifact pointer, not by pasting them.
2. Results come back as summary, summary_data and artifact_pointers; decide from them and \
open an artifact only when you need its content.
3. Workers with an isolated workspace return a diff; it is not applied to the project. Say so \
and give the apply command when the user should review it.
4. A failed child comes back as an error code, a reason and a next step: adapt, retry once \
with a clearer task, or report it. Do not loop.
5. Answer simple requests yourself, without workers."""


def default_approver(mode: ApprovalMode) -> Approver:
    return ModeApprover("allow" if mode == "allow" else "deny")


@dataclass(slots=True)
class TeamSettings:
    approval: ApprovalMode = "deny"
    concurrency: int = 3
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    worker_models: dict[str, str] = field(default_factory=dict)
    team: str | None = None

    def to_meta(self) -> dict[str, Any]:
        return {
            "orchestrator": True,
            "approval": self.approval,
            "concurrency": self.concurrency,
            "budget": self.budget.model_dump(),
            "worker_models": dict(self.worker_models),
            "team": self.team,
        }

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> TeamSettings:
        data = meta.get("agents") or {}
        if not data.get("orchestrator"):
            raise ConfigError(
                "This session is not a multi-agent orchestrator session.",
                code="AGENTS_NOT_ORCHESTRATOR",
                hint="Resume it with `xclaw resume`.",
            )
        return cls(
            approval=data.get("approval", "deny"),
            concurrency=int(data.get("concurrency", 3)),
            budget=BudgetConfig.model_validate(data.get("budget") or {}),
            worker_models=dict(data.get("worker_models") or {}),
            team=data.get("team"),
        )


class Orchestrator:
    """The orchestrator face: ``run`` a task or ``resume`` a session, children included."""

    def __init__(
        self,
        model: Model,
        project: str | Path,
        *,
        store: Store,
        registry: WorkerRegistry,
        agent_factory: AgentFactory,
        model_for: ModelFactory | None = None,
        model_spec: str | None = None,
        settings: TeamSettings | None = None,
        approver: Approver | None = None,
        ask_approver: Approver | None = None,
        limits: Limits | None = None,
        bus: EventBus | None = None,
        sandbox: SandboxSource = None,
        extra_prompt: str = "",
        on_interrupted: OnInterrupted = "skip",
    ) -> None:
        self.model = model
        self.project = Path(project).expanduser().resolve()
        self.store = store
        self.settings = settings or TeamSettings()
        self.registry = _with_models(registry, self.settings.worker_models)
        self.agent_factory = agent_factory  # the tree's agents and the tools they pick from
        self.model_spec = model_spec
        self.model_for = model_for or self._resolve_worker_model
        self.approver = approver or default_approver(self.settings.approval)
        self.ask_approver = ask_approver
        self.limits = limits or Limits()
        self.bus = bus or EventBus()
        self.sandbox = sandbox
        self.extra_prompt = extra_prompt
        self.on_interrupted = on_interrupted  # agents.on_interrupted: a resume's default

    @property
    def system_prompt(self) -> str:
        return f"{ORCHESTRATOR_PROMPT}\n\n{self.roster()}"

    def roster(self) -> str:
        """The workers (and the team's own instructions) as the orchestrator is told them."""
        listed = "\n".join(
            f"- {w.name}: {w.prompt.split('.')[0]}. Workspace: {w.workspace}."
            for w in self.registry
        )
        extra = f"\n\n{self.extra_prompt.strip()}" if self.extra_prompt.strip() else ""
        return f"Workers:\n{listed}{extra}"

    def session_team(self, teams: dict[str, list[str]] | None = None) -> SessionTeam:
        """The team as tools of an ordinary session's agent (a gateway session); ``teams``:
        the configured teams' members, for messages routed to a team."""
        return SessionTeam(self, teams)

    async def run(
        self,
        task: str,
        *,
        control: RunControl | None = None,
        session_id: str | None = None,
        caller: str = "user",
        route: dict[str, Any] | None = None,
    ) -> RunResult:
        sid = session_id or new_session_id()
        control = control or RunControl()
        budget = self._budget()
        agent, unsubscribe = self._agent(sid, control, budget, None, caller, route)
        try:
            return await agent.run(task, control=control, session_id=sid)
        finally:
            unsubscribe()

    async def resume(
        self,
        session_id: str,
        *,
        control: RunControl | None = None,
        interrupted: ResumeChoice | None = None,
        asker: Approver | None = None,
    ) -> RunResult:
        """Continue the orchestrator after a crash or a stop; an unfinished child continues
        where it stopped, finished children are not run again.

        A call with side effects a child had started is settled as ``interrupted`` says
        (default: ``on_interrupted``): ``ask`` puts the question to ``asker`` (else the run's
        approver), ``retry``/``skip`` decide it, ``pause`` stops the tree before anything runs
        (``CHILD_PAUSED``)."""
        choice = interrupted or self.on_interrupted
        if choice == "pause":
            waiting = cut_off_calls(self.store, session_id)
            if waiting:
                self._resumable(session_id)
                return pause_tree(self.store, session_id, waiting)
        control = control or RunControl()
        budget = self._budget()
        budget.count_recorded(self.store, session_id)
        settle = settle_choice(choice)
        agent, unsubscribe = self._agent(session_id, control, budget, settle, "user", None, asker)
        try:
            return await agent.resume(session_id, control=control, interrupted=settle)
        finally:
            unsubscribe()

    def _resumable(self, session_id: str) -> None:
        """The checks ``Agent.resume`` makes, for a resume that stops before it."""
        session = self.store.get_session(session_id)
        if session is None:
            raise ConfigError(f"There is no session {session_id!r}.", code="SESSION_NOT_FOUND")
        if session.state == "success":
            raise ConfigError(
                f"Session {session_id} already finished.",
                code="SESSION_FINISHED",
                hint="Fork it (`xclaw fork`) or start a new run.",
            )

    async def run_worker(
        self,
        worker: str,
        task: str,
        *,
        control: RunControl | None = None,
        session_id: str | None = None,
        caller: str = "user",
        route: dict[str, Any] | None = None,
    ) -> RunResult:
        """A routed message straight to one worker: a top-level session of that worker (in
        the project, or its isolated workspace), with the same budget and approval rules."""
        spec = self.registry.get(worker)
        if spec is None:
            raise ConfigError(f"There is no worker named {worker!r}.", code="WORKER_UNKNOWN")
        sid = session_id or new_session_id()
        control = control or RunControl()
        budget = self._budget()
        tree = self._tree(sid, control, budget, None)
        workdir = (
            await tree.workspaces.prepare(self.project, sid)
            if spec.workspace == "isolated"
            else self.project
        )
        model = self.model_for(spec)
        bus = EventBus()
        bus.subscribe(budget.listener(model_info(model)))
        for fn in self._forwarders():
            bus.subscribe(fn)
        extra = {"route": route} if route is not None else None
        agent = worker_agent(
            tree, spec, workdir, model, bus, parent=None, caller=caller, meta=extra
        )
        try:
            return await agent.run(task, control=control, session_id=sid)
        finally:
            await model.aclose()

    def for_route(self, registry: WorkerRegistry, team: str | None) -> Orchestrator:
        """The same orchestrator with a team's workers only."""
        settings = replace(self.settings, team=team)
        return Orchestrator(
            self.model,
            self.project,
            store=self.store,
            registry=registry,
            agent_factory=self.agent_factory,
            model_for=self.model_for,
            model_spec=self.model_spec,
            settings=settings,
            approver=self.approver,
            ask_approver=self.ask_approver,
            limits=self.limits,
            bus=self.bus,
            sandbox=self.sandbox,
            extra_prompt=self.extra_prompt,
            on_interrupted=self.on_interrupted,
        )

    # -- internals ------------------------------------------------------------------------
    def _forwarders(self) -> list[Any]:
        """A routed worker's events reach the orchestrator bus's subscribers (a live view)."""
        return [self.bus.emit] if self.bus.active else []

    def _budget(self) -> TreeBudget:
        b = self.settings.budget
        return TreeBudget(b.max_tokens, b.max_usd, b.max_seconds)

    def _agent(
        self,
        sid: str,
        control: RunControl,
        budget: TreeBudget,
        interrupted: InterruptedChoice | None,
        caller: str,
        route: dict[str, Any] | None,
        asker: Approver | None = None,
    ) -> tuple[SessionRunner, Any]:
        tree = self._tree(sid, control, budget, interrupted, asker)
        reading = [t for t in self.agent_factory.tools() if t.name in READ_TOOLS]
        meta = self.settings.to_meta()
        if route is not None:
            meta["route"] = route
        settings = AgentSettings(
            self.model,
            self.project,
            ToolRegistry([*orchestrator_tools(lambda _ctx: tree), *reading]),
            self.approver,
            self.limits,
            Hooks(before_model_call=[budget.hook]),
            self.bus,
            self.store,
            self.system_prompt,
            model_spec=self.model_spec,
            sandbox=self.sandbox,
            parent_session_id=None,
            caller=caller,
            meta={"agents": meta},
            evidence_gate=False,  # the work is the children's; each is judged apart
        )
        agent = self.agent_factory.agent(settings)
        unsubscribe = self.bus.subscribe(budget.listener(model_info(self.model)))
        return agent, unsubscribe

    def _tree(
        self,
        sid: str,
        control: RunControl,
        budget: TreeBudget,
        interrupted: InterruptedChoice | None,
        asker: Approver | None = None,
    ) -> TreeContext:
        return TreeContext(
            store=self.store,
            project=self.project,
            parent_session=sid,
            control=control,
            bus=self.bus,
            registry=self.registry,
            model_for=self.model_for,
            approval=self.settings.approval,
            approver=self.approver,
            limits=self.limits,
            budget=budget,
            semaphore=asyncio.Semaphore(self.settings.concurrency),
            agent_factory=self.agent_factory,
            ask_approver=self.ask_approver,
            interrupted=interrupted,
            interrupted_asker=asker,
            sandbox=self.sandbox,
            default_model_spec=self.model_spec,
        )

    def _resolve_worker_model(self, spec: WorkerSpec) -> Model:
        from xclaw.models.resolve import resolve_model

        chosen = spec.model or self.model_spec
        if chosen is None:
            raise ConfigError(
                f"Worker {spec.name!r} has no model and the orchestrator's is not a spec.",
                code="MODEL_NOT_CONFIGURED",
                hint="Set agents.workers.<name>.model in xclaw.yaml or pass --worker-model.",
            )
        return resolve_model(chosen, project=self.project)


SESSION_TEAM_PROMPT = """## Your team

Besides your own tools you can hand work to worker agents, each an agent of its own:
- agents.delegate {worker, task}: one worker, one task.
- agents.debate {workers, question, rounds}: several workers answer in parallel; a judge decides.
- agents.pipeline {steps: [{worker, task}]}: workers in order; {{input}} in a task is the \
previous step's delivery.
- agents.open_artifact {pointer}: read a file or diff a worker delivered.
- agents.ask {worker, message}: continue a worker's own conversation in this chat (it \
remembers your earlier messages to it).
A worker sees only the task you write: make it self-contained. Results come back as a \
summary, data and artifact pointers. A failed child comes back as an error code and a next \
step: adapt or report it, do not loop. Do simple things yourself."""


class SessionTeam:
    """The team of a session that is not an orchestrator session: a gateway session's agent
    gets ``tools()`` beside its own and ``prompt()`` in its system prompt. Each run of that
    agent (the session and control of the call) gets its own tree — budget, semaphore,
    cancellation — and its children are child sessions of that session. A cut-off call of
    a resumed child is asked of the session's approver (the channel), as the session's own."""

    def __init__(
        self, orchestrator: Orchestrator, teams: dict[str, list[str]] | None = None
    ) -> None:
        self.orchestrator = orchestrator
        self.teams = dict(teams or {})
        self.team: str | None = None  # a routed message's team: its workers only
        self._tree: TreeContext | None = None
        self._run: tuple[str, RunControl, str | None] | None = None

    def tree_for(self, ctx: ToolContext) -> TreeContext:
        if not ctx.session_id:
            raise ToolError(
                "Workers can only be started from a recorded session.",
                code="AGENTS_NO_SESSION",
                hint="Run this inside a session (xclaw run, xclaw serve).",
            )
        control = ctx.control or RunControl()
        run = self._run
        if (
            self._tree is None
            or run is None
            or run[0] != ctx.session_id
            or run[1] is not control
            or run[2] != self.team
        ):
            o = self.orchestrator
            self._tree = o._tree(ctx.session_id, control, o._budget(), "ask", o.approver)
            if self.team is not None:
                self._tree.registry = o.registry.only(self.teams[self.team])
            self._run = (ctx.session_id, control, self.team)
        return self._tree

    def tools(self) -> list[Tool]:
        return [*orchestrator_tools(self.tree_for), conversation_tool(self.tree_for)]

    def prompt(self) -> str:
        return f"{SESSION_TEAM_PROMPT}\n\n{self.orchestrator.roster()}"


def _with_models(registry: WorkerRegistry, models: dict[str, str]) -> WorkerRegistry:
    out = WorkerRegistry()
    for spec in registry:
        out.add(replace(spec, model=models[spec.name]) if spec.name in models else spec)
    unknown = set(models) - set(out.names())
    if unknown:
        raise ConfigError(
            f"A worker model was given for unknown workers: {', '.join(sorted(unknown))}.",
            hint="Workers: " + ", ".join(out.names()),
        )
    return out


async def run_routed(
    orchestrator: Orchestrator,
    router: Router,
    content: str,
    *,
    channel: str | None = None,
    peer: str | None = None,
    caller: str = "user",
    control: RunControl | None = None,
) -> tuple[Route, RunResult]:
    """Route a message (rules, then the intent router), then run the chosen worker, or the
    orchestrator with the chosen team (or every worker)."""
    sid = new_session_id()
    route = await router.route(
        content, channel=channel, peer=peer, bus=orchestrator.bus, session_id=sid
    )
    if route.kind == "worker" and route.target is not None:
        result = await orchestrator.run_worker(
            route.target,
            content,
            control=control,
            session_id=sid,
            caller=caller,
            route=route.to_dict(),
        )
        return route, result
    chosen = orchestrator.for_route(router.workers_for(route), route.target)
    result = await chosen.run(
        content, control=control, session_id=sid, caller=caller, route=route.to_dict()
    )
    return route, result
