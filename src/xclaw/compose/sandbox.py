"""The sandbox of a command: chosen once (a bad choice fails before any run), then a new
one for each session the command starts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xclaw.config import XclawConfig

if TYPE_CHECKING:
    from xclaw.sandbox import Backend

__all__ = ["SandboxPlan", "plan_sandbox"]


@dataclass(slots=True)
class SandboxPlan:
    """Callable: each call is a new session's sandbox (the first is the one already made)."""

    config: XclawConfig
    flag: str | None
    mode: str
    warning: str  # host mode and fallbacks: for the surface to show
    _pending: list[Backend] = field(default_factory=list)

    def __call__(self) -> Backend:
        if self._pending:
            return self._pending.pop()
        from xclaw.sandbox.resolve import session_sandbox

        return session_sandbox(self.config, self.flag).sandbox


def plan_sandbox(config: XclawConfig, flag: str | None = None) -> SandboxPlan:
    """``--sandbox`` (or ``sandbox.mode`` of ``config``) resolved now."""
    from xclaw.sandbox.resolve import session_sandbox

    first = session_sandbox(config, flag)
    return SandboxPlan(config, flag, str(first.mode), first.warning, [first.sandbox])
