"""Behaviour configuration: ``xclaw.yaml`` (project, then user), then the environment.

Secrets never live here; they come from the environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from xclaw.core.errors import ConfigError
from xclaw.core.limits import Limits
from xclaw.dirs import config_dir

ApprovalMode = Literal["ask", "deny", "allow"]


class LimitsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_turns: int = Field(200, ge=1)
    turn_timeout_s: float = Field(600.0, gt=0)
    tool_timeout_s: float = Field(900.0, gt=0)
    max_protocol_errors: int = Field(3, ge=0)
    max_identical_calls: int = Field(5, ge=1)
    max_output_bytes: int = Field(50_000_000, ge=1)
    wall_time_s: float = Field(4 * 3600.0, gt=0)

    def to_limits(self) -> Limits:
        return Limits(**self.model_dump())


class XclawConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str | None = None
    approval: ApprovalMode | None = None
    limits: LimitsConfig = Field(default_factory=LimitsConfig)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError:
        return {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid YAML: {err}", hint="Fix the file.") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping", hint="Fix the file.")
    return data


def load_config(project: Path | None = None) -> XclawConfig:
    """User file, overridden by the project file, overridden by XCLAW_* variables."""
    merged: dict[str, Any] = _read_yaml(config_dir() / "xclaw.yaml")
    if project is not None:
        local = _read_yaml(project / "xclaw.yaml")
        if local.get("approval") == "allow":
            # A project file can be written by anyone who can write the project, the agent
            # included: it must never be able to turn approvals off.
            raise ConfigError(
                f"{project / 'xclaw.yaml'} sets approval: allow, which a project file may not do.",
                code="CONFIG_UNSAFE",
                hint="Put it in your user config (~/.config/xclaw/xclaw.yaml) or pass "
                "--approval allow.",
            )
        merged.update(local)
    if os.environ.get("XCLAW_MODEL"):
        merged["model"] = os.environ["XCLAW_MODEL"]
    try:
        return XclawConfig.model_validate(merged)
    except ValidationError as err:
        raise ConfigError(f"configuration is invalid: {err}", hint="Fix xclaw.yaml.") from None
