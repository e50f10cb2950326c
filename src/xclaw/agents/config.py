"""The ``agents:`` section of ``xclaw.yaml``: workers, teams, routing rules, tree budget.

    agents:
      concurrency: 3
      budget: {max_tokens: 200000, max_usd: 2.0, max_seconds: 1800}
      workers:
        coder: {model: "openai:gpt-4.1", max_turns: 12}       # overrides a built-in role
        translator:                                            # a new role
          prompt: "You translate documents into English."
          tools: [fs.read, fs.write]
          workspace: isolated
      teams:
        docs: {workers: [writer, reviewer]}
      routes:
        - {channel: telegram, target: docs}
        - {keywords: [review, 审查], target: reviewer}
      intent_router: true
      on_interrupted: skip        # resume with no terminal: skip | retry | pause
      serve: true                 # `xclaw serve` sessions get the team (default: when this
                                  # section is configured)

Validated here (pydantic); roles, tools and approval narrowing are checked when the registry
is built, against the parent's settings (see ``registry.py``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from xclaw.config import XclawConfig
from xclaw.core.errors import ConfigError

NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"
ApprovalMode = Literal["deny", "ask", "allow"]
WorkspaceMode = Literal["project", "isolated"]
OnInterrupted = Literal["skip", "retry", "pause"]


class WorkerConfig(BaseModel):
    """A worker role; every field left out keeps the built-in role's value (or the default)."""

    model_config = ConfigDict(extra="forbid")
    prompt: str | None = Field(None, min_length=1, max_length=20_000)
    tools: list[str] | None = None
    model: str | None = None  # a model spec; default: the orchestrator's model
    max_turns: int | None = Field(None, ge=1, le=500)
    time_limit_s: float | None = Field(None, gt=0, le=24 * 3600)
    workspace: WorkspaceMode | None = None
    approval: ApprovalMode | None = None  # may only narrow the parent's mode


class TeamConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workers: list[str] = Field(min_length=1)
    prompt: str | None = Field(None, max_length=20_000)  # extra orchestrator instructions


class RouteRule(BaseModel):
    """Matches when every given condition holds; ``target`` is a team or a worker."""

    model_config = ConfigDict(extra="forbid")
    channel: str | None = None
    peer: str | None = None
    keywords: list[str] = Field(default_factory=list)  # any one, case-insensitive
    target: str = Field(pattern=NAME_PATTERN)


class BudgetConfig(BaseModel):
    """Shared by the whole tree (orchestrator and every child)."""

    model_config = ConfigDict(extra="forbid")
    max_tokens: int | None = Field(None, ge=1)
    max_usd: float | None = Field(None, gt=0)
    max_seconds: float | None = Field(None, gt=0)


class AgentsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workers: dict[str, WorkerConfig] = Field(default_factory=dict)
    teams: dict[str, TeamConfig] = Field(default_factory=dict)
    routes: list[RouteRule] = Field(default_factory=list)
    intent_router: bool = False
    concurrency: int = Field(3, ge=1, le=32)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    # A resume with no terminal: a child's call cut off by a crash is skipped (its effect is
    # unknown, the child is told), run again, or the tree pauses for `--skip/--retry-interrupted`.
    on_interrupted: OnInterrupted = "skip"
    # Whether each `xclaw serve` session (web, chat channels) gets the team's agents.* tools;
    # None: yes when an agents section is configured at all.
    serve: bool | None = None


def parse_agents_config(data: Any, source: str = "agents") -> AgentsConfig:
    if data is None:
        return AgentsConfig()
    try:
        return AgentsConfig.model_validate(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ConfigError(
            f"{source}: {where}: {first['msg']}",
            code="CONFIG_INVALID",
            hint="Fix the agents section of xclaw.yaml.",
        ) from None


def load_agents_config(config: XclawConfig) -> AgentsConfig:
    """The ``agents:`` section of the resolved configuration (``xclaw.config.load_config``):
    the user file's, the project file's on top, merged key by key (workers and teams by name).
    A project file may not raise a worker's approval: the registry refuses any worker asking
    for more than the parent run has, wherever it was configured."""
    return parse_agents_config(config.agents, "xclaw.yaml agents")
