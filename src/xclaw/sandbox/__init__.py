"""Where model-run programs run: ``bwrap`` (default on Linux), ``full`` (a remote E2B-compatible
sandbox per session) or ``host`` (explicit choice, or when bubblewrap cannot work — then with a
warning, never silently).

``make_sandbox`` picks one from the configured mode; ``SandboxChoice.warning`` says what the
live view and ``doctor`` must show.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xclaw.core.errors import ConfigError
from xclaw.sandbox.base import CommandRequest, Launch, LocalSandbox, Mode, RemoteSandbox
from xclaw.sandbox.bwrap import BwrapOptions, BwrapSandbox, bwrap_problem
from xclaw.sandbox.host import HostSandbox
from xclaw.sandbox.orphans import reap_orphans

Requested = Literal["auto", "bwrap", "host", "full"]
Sandbox = BwrapSandbox | HostSandbox | RemoteSandbox

__all__ = [
    "BwrapOptions",
    "BwrapSandbox",
    "CommandRequest",
    "HostSandbox",
    "Launch",
    "LocalSandbox",
    "Mode",
    "RemoteSandbox",
    "Requested",
    "Sandbox",
    "SandboxChoice",
    "make_sandbox",
    "requested_mode",
]


@dataclass(frozen=True, slots=True)
class SandboxChoice:
    sandbox: Sandbox
    warning: str = ""

    @property
    def mode(self) -> Mode:
        return self.sandbox.mode


_REAP_EVERY_S = 5.0
_last_reap = [float("-inf")]


def _reap_now_and_then() -> None:
    """Reap at most every few seconds: a gateway makes a sandbox per turn, and a /proc scan
    costs about a millisecond each time (bench/gateway_load.py)."""
    now = time.monotonic()
    if now - _last_reap[0] >= _REAP_EVERY_S:
        _last_reap[0] = now
        reap_orphans()


def _bwrap_gaps(opts: BwrapOptions) -> str:
    """What this machine's bwrap sandbox lacks; shown in the live view and by doctor."""
    from xclaw.sandbox.limits import pids_base
    from xclaw.sandbox.seccomp import filter_program

    gaps = []
    if filter_program() is None:
        gaps.append("no seccomp filter (install libseccomp2)")
    if opts.run_as is None and os.geteuid() == 0 and pids_base() is None:
        gaps.append("no process limit for root (no writable pids cgroup)")
    return f"sandbox: bwrap with {'; '.join(gaps)} — see xclaw doctor" if gaps else ""


def requested_mode(flag: str | None = None, configured: str | None = None) -> Requested:
    """The flag, then ``XCLAW_SANDBOX``, then the config, then ``auto``."""
    raw = flag or os.environ.get("XCLAW_SANDBOX") or configured or "auto"
    if raw not in ("auto", "bwrap", "host", "full"):
        raise ConfigError(
            f"Unknown sandbox mode {raw!r}.",
            code="CONFIG_INVALID",
            hint="Use one of: auto, bwrap, host, full.",
        )
    return raw  # type: ignore[return-value]


def make_sandbox(
    requested: Requested = "auto",
    *,
    options: BwrapOptions | None = None,
    hidden: tuple[Path, ...] = (),
) -> SandboxChoice:
    """Build the sandbox for one session. ``bwrap`` asked for but unusable is an error."""
    opts = options or BwrapOptions()
    opts.hidden = hidden or opts.hidden
    if requested == "full":
        from xclaw.sandbox.remote import sandbox_from_environment

        return SandboxChoice(sandbox_from_environment())
    if requested == "host":
        return SandboxChoice(
            HostSandbox(opts.env_passthrough, "chosen"),
            "sandbox: host mode (chosen) — commands run unconfined as your user; "
            "everything but known read-only commands asks first",
        )
    problem = bwrap_problem()
    if problem is None:
        _reap_now_and_then()  # sandboxes a killed xclaw left behind
        return SandboxChoice(BwrapSandbox(opts), _bwrap_gaps(opts))
    if requested == "bwrap":
        raise ConfigError(
            f"The bwrap sandbox was requested but {problem}.",
            code="SANDBOX_UNAVAILABLE",
            hint="Install bubblewrap (apt-get install bubblewrap) and allow user namespaces, "
            "or choose --sandbox host knowingly.",
        )
    return SandboxChoice(
        HostSandbox(opts.env_passthrough, problem),
        f"sandbox: host mode because {problem} — commands run unconfined as your user; "
        "everything but known read-only commands asks first",
    )
