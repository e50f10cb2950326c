"""The dedicated browser profile: ``<data dir>/browser/<site>/``, owner-only, never in a project.

A profile holds the user's logged-in session cookies, so it must not end up in a project a
model can read, commit or upload; and it is never the user's everyday profile (seed 000 §4.2).
"""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from xclaw.core.errors import ConfigError
from xclaw.dirs import data_dir

_SITE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
# A directory holding one of these is somebody's project.
_PROJECT_MARKERS = (".git", ".hg", "pyproject.toml", "package.json")
_LOCK = "SingletonLock"  # Chromium's "this profile is open" link: "<host>-<pid>"


def profile_dir(site: str, *, path: Path | None = None, project_roots: Sequence[Path] = ()) -> Path:
    """Create (mode 0700) and return the profile directory for ``site``.

    ``path`` overrides the default place; either way the directory must not lie inside one of
    ``project_roots`` nor inside any directory that looks like a project."""
    if not _SITE.fullmatch(site):
        raise ConfigError(
            f"{site!r} is not a usable profile name.",
            hint="Use lowercase letters, digits, '.', '_' or '-'.",
        )
    target = (path or data_dir() / "browser" / site).expanduser().resolve()
    _refuse_project(target, project_roots)
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(target, 0o700)  # mkdir's mode is filtered by the umask
    return target


def _refuse_project(target: Path, project_roots: Sequence[Path]) -> None:
    home = Path.home().resolve()
    roots = [r.expanduser().resolve() for r in project_roots]
    inside = next((r for r in roots if target == r or r in target.parents), None)
    if inside is None:
        # Above the home directory a marker says nothing (a dotfiles repository in $HOME).
        below_home = [p for p in (target, *target.parents) if home in p.parents]
        inside = next((p for p in below_home if _looks_like_project(p)), None)
    if inside is not None:
        raise ConfigError(
            f"The browser profile {target} would lie inside the project {inside}.",
            code="BROWSER_PROFILE_IN_PROJECT",
            hint="Keep the profile in xclaw's data directory (the default), outside projects.",
        )


def _looks_like_project(directory: Path) -> bool:
    return any((directory / marker).exists() for marker in _PROJECT_MARKERS)


def profile_owner_pid(profile: Path) -> int | None:
    """The pid of a live browser on this host that holds ``profile`` open, if any."""
    if sys.platform.startswith("win"):
        return None  # no lock link there, and os.kill(pid, 0) would send a Ctrl+C
    try:
        owner = os.readlink(profile / _LOCK)
    except OSError:
        return None
    host, _, pid_text = owner.rpartition("-")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # a stale lock left by a crash; Chromium takes it over
    except PermissionError:
        return pid  # alive, owned by someone else
    return pid
