"""The session sandbox of every entry point, built from the resolved configuration.

``run``, ``tools call``, ``patch``, ``serve``, ``chronos``, ``agents``, ``mcp serve``, ``eval``,
``demo`` and a ``Workspace`` left without one (with the user's configuration) all call
``session_sandbox``: the mode is the flag, then ``XCLAW_SANDBOX``, then the config
(``requested_mode``); the options are the user's
(``SandboxConfig.options``: read-only paths, passed variables, ``run_as`` with
``AGENT_RUN_UID``/``AGENT_RUN_GID``); xclaw's own data and config folders are hidden.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from xclaw.dirs import config_dir, data_dir
from xclaw.sandbox import BwrapOptions, SandboxChoice, make_sandbox, requested_mode

if TYPE_CHECKING:
    from xclaw.config import XclawConfig


def private_dirs() -> tuple[Path, ...]:
    """xclaw's data (sessions, trust records) and config: never shown to a command."""
    return (data_dir(), config_dir())


def session_options(cfg: XclawConfig, *, visible: Path | None = None) -> BwrapOptions:
    """The bwrap options of a session. ``visible`` is a folder the session works in that lies
    inside a private dir (patch worktrees live in the data dir): that dir is not masked, since
    the mask would cover the folder too."""
    options: BwrapOptions = cfg.sandbox.options()
    options.hidden = tuple(d for d in private_dirs() if visible is None or not _holds(d, visible))
    return options


def session_sandbox(
    cfg: XclawConfig,
    flag: str | None = None,
    *,
    local: bool = False,
    visible: Path | None = None,
) -> SandboxChoice:
    """The sandbox of one session. ``local``: the caller starts programs itself (patch checks
    and git), so a remote ``full`` choice becomes ``auto``."""
    requested = requested_mode(flag, cfg.sandbox.mode)
    if local and requested == "full":
        requested = "auto"
    options = session_options(cfg, visible=visible)
    return make_sandbox(requested, options=options, hidden=options.hidden)


def _holds(folder: Path, path: Path) -> bool:
    return path == folder or folder in path.parents
