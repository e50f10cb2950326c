"""The session sandbox of every entry point, built from the resolved configuration.

``run``, ``tools call``, ``serve``, ``chronos``, ``agents``, ``mcp serve``, ``eval``, ``demo``
and a ``Workspace`` left without one (with the user's configuration) all call
``session_sandbox``; ``patch``, whose checks and git run on this machine, ``local_sandbox``.
The mode is the flag, then ``XCLAW_SANDBOX``, then the config (``requested_mode``); the
options are the user's (``config_options``: read-only paths, passed variables, ``run_as``
with ``AGENT_RUN_UID``/``AGENT_RUN_GID``); xclaw's own data and config folders are hidden.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from xclaw.core.errors import ConfigError
from xclaw.dirs import config_dir, data_dir
from xclaw.sandbox import (
    BwrapOptions,
    LocalBackend,
    SandboxChoice,
    make_local_sandbox,
    make_sandbox,
    requested_mode,
)

if TYPE_CHECKING:
    from xclaw.config import SandboxConfig, XclawConfig


def config_options(section: SandboxConfig) -> BwrapOptions:
    """The user's sandbox options: read-only paths, passed variables, and ``run_as`` from
    ``run_as_uid``/``run_as_gid`` or ``AGENT_RUN_UID``/``AGENT_RUN_GID`` (seed 003)."""
    paths = tuple(Path(os.path.expanduser(p)) for p in section.read_only_paths)
    uid = section.run_as_uid or _int_env("AGENT_RUN_UID")
    gid = section.run_as_gid or _int_env("AGENT_RUN_GID") or uid
    return BwrapOptions(
        read_only_paths=paths,
        env_passthrough=tuple(section.env_passthrough),
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


def private_dirs() -> tuple[Path, ...]:
    """xclaw's data (sessions, trust records) and config: never shown to a command."""
    return (data_dir(), config_dir())


def session_options(cfg: XclawConfig, *, visible: Path | None = None) -> BwrapOptions:
    """The bwrap options of a session. ``visible`` is a folder the session works in that lies
    inside a private dir (patch worktrees live in the data dir): that dir is not masked, since
    the mask would cover the folder too."""
    options = config_options(cfg.sandbox)
    options.hidden = tuple(d for d in private_dirs() if visible is None or not _holds(d, visible))
    return options


def session_sandbox(
    cfg: XclawConfig, flag: str | None = None, *, visible: Path | None = None
) -> SandboxChoice:
    """The sandbox of one session."""
    options = session_options(cfg, visible=visible)
    requested = requested_mode(flag, cfg.sandbox.mode)
    return make_sandbox(requested, options=options, hidden=options.hidden)


def local_sandbox(cfg: XclawConfig, *, visible: Path | None = None) -> LocalBackend:
    """The sandbox of a caller that starts programs itself on this machine (patch checks and
    git): a remote ``full`` choice becomes ``auto``."""
    options = session_options(cfg, visible=visible)
    requested = requested_mode(None, cfg.sandbox.mode)
    chosen = "auto" if requested == "full" else requested
    sandbox, _ = make_local_sandbox(chosen, options=options, hidden=options.hidden)
    return sandbox


def _holds(folder: Path, path: Path) -> bool:
    return path == folder or folder in path.parents
