"""Where model-run programs run: ``bwrap`` (default on Linux), ``full`` (a remote E2B-compatible
sandbox per session) or ``host`` (explicit choice, or when bubblewrap cannot work — then with a
warning, never silently).

``make_sandbox`` picks one from the configured mode; ``SandboxChoice.warning`` says what the
live view and ``doctor`` must show. Every backend implements ``xclaw.core.sandbox.Sandbox``
(re-exported here), the contract the layers that only hold a sandbox type against.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xclaw.core.errors import ConfigError
from xclaw.core.sandbox import Mode, Sandbox
from xclaw.sandbox.base import CommandRequest, Launch, LocalSandbox, RemoteSandbox
from xclaw.sandbox.bwrap import BwrapOptions, BwrapSandbox, bwrap_problem
from xclaw.sandbox.host import HostSandbox
from xclaw.sandbox.orphans import reap_orphans

Requested = Literal["auto", "bwrap", "host", "full"]
LocalRequested = Literal["auto", "bwrap", "host"]
LocalBackend = BwrapSandbox | HostSandbox
Backend = LocalBackend | RemoteSandbox  # what ``make_sandbox`` builds

__all__ = [
    "Backend",
    "BwrapOptions",
    "BwrapSandbox",
    "CommandRequest",
    "HostSandbox",
    "Launch",
    "LocalBackend",
    "LocalRequested",
    "LocalSandbox",
    "Mode",
    "RemoteSandbox",
    "Requested",
    "Sandbox",
    "SandboxChoice",
    "make_local_sandbox",
    "make_sandbox",
    "requested_mode",
]


@dataclass(frozen=True, slots=True)
class SandboxChoice:
    sandbox: Backend
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
    if requested == "full":
        from xclaw.core.extras import require

        require("sandbox-remote", "--sandbox full (an E2B sandbox)")
        from xclaw.sandbox.remote import sandbox_from_environment

        return SandboxChoice(sandbox_from_environment())
    local, warning = make_local_sandbox(requested, options=options, hidden=hidden)
    return SandboxChoice(local, warning)


def make_local_sandbox(
    requested: LocalRequested = "auto",
    *,
    options: BwrapOptions | None = None,
    hidden: tuple[Path, ...] = (),
) -> tuple[LocalBackend, str]:
    """A sandbox that starts programs on this machine, and the warning to show (or "")."""
    opts = options or BwrapOptions()
    opts.hidden = hidden or opts.hidden
    if requested == "host":
        return (
            HostSandbox(opts.env_passthrough, "chosen"),
            "sandbox: host mode (chosen) — commands run unconfined as your user; "
            "everything but known read-only commands asks first",
        )
    problem = bwrap_problem()
    if problem is None:
        _reap_now_and_then()  # sandboxes a killed xclaw left behind
        return BwrapSandbox(opts), _bwrap_gaps(opts)
    if requested == "bwrap":
        raise ConfigError(
            f"The bwrap sandbox was requested but {problem}.",
            code="SANDBOX_UNAVAILABLE",
            hint="Install bubblewrap (apt-get install bubblewrap) and allow user namespaces, "
            "or choose --sandbox host knowingly.",
        )
    return (
        HostSandbox(opts.env_passthrough, problem),
        f"sandbox: host mode because {problem} — commands run unconfined as your user; "
        "everything but known read-only commands asks first",
    )
