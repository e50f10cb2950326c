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


SandboxMode = Literal["auto", "bwrap", "host", "full"]


class SandboxConfig(BaseModel):
    """Where commands run (see xclaw.sandbox). Only your user config or a flag may weaken it."""

    model_config = ConfigDict(extra="forbid")
    mode: SandboxMode | None = None
    read_only_paths: list[str] = Field(default_factory=list)  # extra folders shown read-only
    env_passthrough: list[str] = Field(default_factory=list)  # extra variable names passed
    # Run commands as another user (seed 003: AGENT_RUN_UID / AGENT_RUN_GID also work).
    run_as_uid: int | None = Field(None, ge=1)
    run_as_gid: int | None = Field(None, ge=1)

    def options(self) -> Any:
        from xclaw.sandbox import BwrapOptions

        paths = tuple(Path(os.path.expanduser(p)) for p in self.read_only_paths)
        uid = self.run_as_uid or _int_env("AGENT_RUN_UID")
        gid = self.run_as_gid or _int_env("AGENT_RUN_GID") or uid
        return BwrapOptions(
            read_only_paths=paths,
            env_passthrough=tuple(self.env_passthrough),
            run_as=(uid, gid) if uid and gid else None,
        )


def _int_env(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) == 0:
        raise ConfigError(
            f"{name}={raw!r} is not a user id above 0.",
            code="CONFIG_INVALID",
            hint=f"Set {name} to the numeric id of an unprivileged user, or unset it.",
        )
    return int(raw)


class CheckConfig(BaseModel):
    """A trusted check of ``xclaw patch``: a program and its arguments, never a shell line."""

    model_config = ConfigDict(extra="forbid")
    command: list[str] = Field(min_length=1)
    required: bool = False


class PatchConfig(BaseModel):
    """Change-job settings only the user may give (a project file may not loosen them)."""

    model_config = ConfigDict(extra="forbid")
    editable_lockfiles: list[str] = Field(default_factory=list)  # e.g. [Cargo.lock]


class XclawConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str | None = None
    approval: ApprovalMode | None = None
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    checks: dict[str, CheckConfig] = Field(default_factory=dict)
    patch: PatchConfig = Field(default_factory=PatchConfig)


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


def _refuse_weakening_sandbox(path: Path, sandbox: object) -> None:
    """A project file may choose bwrap or full, never host mode or wider visibility."""
    if not isinstance(sandbox, dict):
        return
    widening = ("read_only_paths", "env_passthrough", "run_as_uid", "run_as_gid")
    if sandbox.get("mode") == "host" or any(sandbox.get(key) for key in widening):
        raise ConfigError(
            f"{path} weakens the sandbox (host mode, read_only_paths, env_passthrough or "
            "run_as), "
            "which a project file may not do.",
            code="CONFIG_UNSAFE",
            hint="Put it in your user config (~/.config/xclaw/xclaw.yaml) or pass --sandbox host.",
        )


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
        _refuse_weakening_sandbox(project / "xclaw.yaml", local.get("sandbox"))
        for key in ("checks", "patch"):
            if key not in local:
                continue
            # A check is a command xclaw runs unasked, and patch settings widen what a job may
            # edit: only the user may give them.
            raise ConfigError(
                f"{project / 'xclaw.yaml'} defines {key}, which a project file may not do.",
                code="CONFIG_UNSAFE",
                hint=f"Define {key} in your user config (~/.config/xclaw/xclaw.yaml).",
            )
        merged.update(local)
    if os.environ.get("XCLAW_MODEL"):
        merged["model"] = os.environ["XCLAW_MODEL"]
    try:
        return XclawConfig.model_validate(merged)
    except ValidationError as err:
        raise ConfigError(f"configuration is invalid: {err}", hint="Fix xclaw.yaml.") from None
