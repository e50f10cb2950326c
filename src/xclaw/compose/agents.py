"""The multi-agent face, assembled: the orchestrator of ``xclaw agents run``/``resume`` with
its worker registry (built-in roles and ``agents.workers``), team, budget, limits, sandbox
plan and store, from the resolved configuration."""

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
    from xclaw.agents.config import AgentsConfig
    from xclaw.agents.registry import WorkerRegistry
    from xclaw.agents.team import Orchestrator, TeamSettings
    from xclaw.core.events import EventBus
    from xclaw.core.tooling import Approver

__all__ = ["TeamOverrides", "build_orchestrator"]


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
) -> tuple[Orchestrator, AgentsConfig]:
    """The orchestrator of ``directory``. ``approval``: the parent's effective mode (ask,
    deny, allow), which bounds every worker's; ``approver_for`` makes its approver."""
    from xclaw.agents.config import parse_agents_config
    from xclaw.agents.team import Orchestrator

    flags = team or TeamOverrides()
    agents_cfg = parse_agents_config(config.agents, "xclaw.yaml agents")
    # --protocol is the orchestrator's; workers' models follow `models:` in xclaw.yaml.
    model, chosen = face_model(config, directory, overrides)
    settings = _team_settings(agents_cfg, flags, approval, overrides.approval is not None)
    registry, extra = _workers(config, agents_cfg, settings)
    orchestrator = Orchestrator(
        model,
        directory,
        store=open_configured_store(config),
        registry=registry,
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
