"""What a command gives the builders: the resolved configuration, read once, and the
overrides its flags make (``None``: the configuration decides)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from xclaw.config import XclawConfig, load_config
from xclaw.core.limits import Limits

if TYPE_CHECKING:
    from xclaw.browser.session import BrowserSession
    from xclaw.core.tooling import Approver

__all__ = ["Overrides", "approval_mode", "limits_for", "resolve_config"]


@dataclass(frozen=True, slots=True)
class Overrides:
    """A command's flags, as the builders apply them over the configuration."""

    model: str | None = None  # provider:model, or a comma-separated failover chain
    base_url: str | None = None
    protocol: str | None = None  # native | xml | auto
    approval: str | None = None  # ask | deny | allow
    sandbox: str | None = None  # auto | bwrap | host | full
    max_turns: int | None = None
    memory: bool = False
    browser: BrowserSession | None = None  # browser.* tools on this session's browser
    trace: str | None = None  # console | json: spans on stderr


def resolve_config(directory: Path | None = None) -> XclawConfig:
    """The configuration of a command on ``directory``: defaults, the user's file, the
    project's, ``XCLAW_*``. Called once per command; everything below receives it."""
    return load_config(directory)


def limits_for(config: XclawConfig, overrides: Overrides) -> Limits:
    """The user's ``limits:`` with ``--max-turns`` over them."""
    limits = config.limits.to_limits()
    if overrides.max_turns is not None:
        limits = replace(limits, max_turns=overrides.max_turns)
    return limits


def approval_mode(config: XclawConfig, overrides: Overrides) -> str | None:
    """``--approval``, else ``approval:`` of the configuration (None: the surface's default)."""
    return overrides.approval or config.approval


def mode_approver(mode: str | None) -> Approver:
    """An approver without a person: ``allow`` approves once; anything else (``ask`` with
    nobody to ask included) denies."""
    from xclaw.policy.approval import ModeApprover

    chosen: Literal["allow", "deny"] = "allow" if mode == "allow" else "deny"
    return ModeApprover(chosen)
