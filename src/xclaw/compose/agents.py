"""The multi-agent face, assembled: the orchestrator of ``xclaw agents run``/``resume`` with
its worker registry (built-in roles and ``agents.workers``), team, budget, limits, sandbox
plan and store, from the resolved configuration. The tree's agents are coding ``Agent``s
over the coding tools (``CodingAgents``, the tree's ``AgentFactory``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xclaw.compose.coding import coding_tools, face_model, open_configured_store
from xclaw.compose.sandbox import SandboxPlan, plan_sandbox
from xclaw.compose.settings import Overrides, limits_for, mode_approver
from xclaw.config import XclawConfig
from xclaw.core.errors import ConfigError

if TYPE_CHECKING:
    from xclaw.agents.children import ModelFactory
    from xclaw.agents.config import AgentsConfig
    from xclaw.agents.factory import AgentSettings
    from xclaw.agents.registry import WorkerRegistry, WorkerSpec
    from xclaw.agents.routing import Router
    from xclaw.agents.team import Orchestrator, SessionTeam, TeamSettings
    from xclaw.coding.agent import Agent
    from xclaw.core.events import EventBus
    from xclaw.core.model import Model
    from xclaw.core.tooling import Approver
    from xclaw.store.base import Store
    from xclaw.tools.registry import ToolRegistry

__all__ = ["CodingAgents", "ServeTeam", "TeamOverrides", "build_orchestrator", "session_team"]


class CodingAgents:
    """The tree's ``AgentFactory``: each agent of a multi-agent tree (the orchestrator's
    run, a child, a worker's conversation) is a coding ``Agent``, its tools picked from the
    coding tools."""

    def agent(self, settings: AgentSettings) -> Agent:
        from xclaw.coding.agent import Agent

        return Agent(
            settings.model,
            settings.workdir,
            settings.tools,
            approval=settings.approver,
            limits=settings.limits,
            hooks=settings.hooks,
            bus=settings.bus,
            store=settings.store,
            system_prompt=settings.system_prompt,
            evidence_gate_enabled=settings.evidence_gate,
            model_spec=settings.model_spec,
            sandbox=settings.sandbox,
            parent_session_id=settings.parent_session_id,
            caller=settings.caller,
            session_meta=settings.meta,
        )

    def tools(self) -> ToolRegistry:
        from xclaw.coding.toolset import coding_registry

        return coding_registry()


@dataclass(frozen=True, slots=True)
class TeamOverrides:
    """``xclaw agents run``'s team flags (a resume takes the team saved with the session)."""

    worker_models: dict[str, str] = field(default_factory=dict)
    concurrency: int | None = None
    budget: dict[str, Any] = field(default_factory=dict)  # max_tokens, max_usd, max_seconds
    team: str | None = None
    saved: dict[str, Any] | None = None  # a resume: the session's meta


def build_orchestrator(
    config: XclawConfig,
    directory: Path,
    overrides: Overrides,
    approval: str,
    *,
    team: TeamOverrides | None = None,
    approver_for: Callable[[str], Approver] = mode_approver,
    bus: EventBus | None = None,
    sandbox: SandboxPlan | None = None,
    store: Store | None = None,
    model: tuple[Model, str] | None = None,
) -> tuple[Orchestrator, AgentsConfig]:
    """The orchestrator of ``directory``. ``approval``: the parent's effective mode (ask,
    deny, allow), which bounds every worker's; ``approver_for`` makes its approver;
    ``store`` and ``model`` when the caller has them already (a gateway session)."""
    from xclaw.agents.config import parse_agents_config
    from xclaw.agents.team import Orchestrator

    flags = team or TeamOverrides()
    agents_cfg = parse_agents_config(config.agents, "xclaw.yaml agents")
    # --protocol is the orchestrator's; workers' models follow `models:` in xclaw.yaml.
    lead, chosen = model or face_model(config, directory, overrides)
    settings = _team_settings(agents_cfg, flags, approval, overrides.approval is not None)
    registry, extra = _workers(config, agents_cfg, settings)
    orchestrator = Orchestrator(
        lead,
        directory,
        store=store or open_configured_store(config),
        registry=registry,
        agent_factory=CodingAgents(),
        model_for=_worker_models(config, directory, chosen),
        model_spec=chosen,
        settings=settings,
        approver=approver_for(settings.approval),
        limits=limits_for(config, overrides),
        bus=bus,
        sandbox=sandbox or plan_sandbox(config, overrides.sandbox),
        extra_prompt=extra,
        on_interrupted=agents_cfg.on_interrupted,
    )
    return orchestrator, agents_cfg


@dataclass(frozen=True, slots=True)
class ServeTeam:
    """A gateway session's team: its tools and prompt, and the router when routes or the
    intent router are configured."""

    team: SessionTeam
    router: Router | None


def session_team(
    config: XclawConfig,
    directory: Path,
    overrides: Overrides,
    *,
    store: Store,
    model: tuple[Model, str],
    bus: EventBus,
    approver: Approver,
    sandbox: SandboxPlan,
) -> ServeTeam | None:
    """The team a gateway session's agent gets (``agents.serve``; default: when an agents
    section is configured), asking the session's channel whatever a worker must ask; None
    without one."""
    from xclaw.agents.config import parse_agents_config
    from xclaw.agents.routing import Router

    agents_cfg = parse_agents_config(config.agents, "xclaw.yaml agents")
    wanted = agents_cfg.serve if agents_cfg.serve is not None else bool(config.agents)
    if not wanted:
        return None
    orchestrator, _cfg = build_orchestrator(
        config,
        directory,
        overrides,
        "ask",
        approver_for=lambda _mode: approver,
        bus=bus,
        sandbox=sandbox,
        store=store,
        model=model,
    )
    members = {name: list(t.workers) for name, t in agents_cfg.teams.items()}
    router = None
    if agents_cfg.routes or agents_cfg.intent_router:
        router = Router(
            orchestrator.registry,
            rules=agents_cfg.routes,
            teams=agents_cfg.teams,
            intent_model=model[0] if agents_cfg.intent_router else None,
        )
    return ServeTeam(orchestrator.session_team(members), router)


def _worker_models(config: XclawConfig, directory: Path, lead: str) -> ModelFactory:
    """Each worker's model: its own spec (``--worker-model``, ``agents.workers.<name>.model``)
    or the orchestrator's, with the configuration's ``models:`` settings."""
    from xclaw.models.resolve import resolve_model

    def make(spec: WorkerSpec) -> Model:
        return resolve_model(spec.model or lead, project=directory, model_settings=config.models)

    return make


def _team_settings(
    agents_cfg: AgentsConfig, flags: TeamOverrides, approval: str, approval_given: bool
) -> TeamSettings:
    from xclaw.agents.config import BudgetConfig
    from xclaw.agents.team import TeamSettings

    if flags.saved is not None:  # a resume: the team as it was saved
        settings = TeamSettings.from_meta(flags.saved)
        if approval_given:
            settings.approval = approval  # type: ignore[assignment]
        return settings
    budget_cfg = agents_cfg.budget.model_copy(
        update={k: v for k, v in flags.budget.items() if v is not None}
    )
    return TeamSettings(
        approval=approval,  # type: ignore[arg-type]
        concurrency=flags.concurrency or agents_cfg.concurrency,
        budget=BudgetConfig.model_validate(budget_cfg.model_dump()),
        worker_models=dict(flags.worker_models),
        team=flags.team,
    )


def _workers(
    config: XclawConfig, agents_cfg: AgentsConfig, settings: TeamSettings
) -> tuple[WorkerRegistry, str]:
    """The workers the orchestrator may delegate to (the team's only), and its prompt."""
    from xclaw.agents.registry import build_registry

    registry = build_registry(
        agents_cfg,
        known_tools=[t.name for t in coding_tools(config)],
        parent_approval=settings.approval,
    )
    if settings.team is None:
        return registry, ""
    team_cfg = agents_cfg.teams.get(settings.team)
    if team_cfg is None:
        raise ConfigError(
            f"There is no team {settings.team!r}.",
            hint="Teams: " + (", ".join(agents_cfg.teams) or "none configured"),
        )
    return registry.only(team_cfg.workers), team_cfg.prompt or ""
