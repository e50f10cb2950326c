"""Where xclaw keeps its data: the XDG data dir, owner-only, never inside a project."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path


def made_dir(path: Path) -> Path:
    """``path``, created owner-only if missing (one stat when it exists: this runs per turn)."""
    if not os.path.isdir(path):
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def data_dir() -> Path:
    return made_dir(_data_path(os.environ.get("XDG_DATA_HOME"), os.environ.get("HOME")))


@lru_cache(maxsize=16)
def _data_path(xdg_data_home: str | None, _home: str | None) -> Path:
    """The data dir's path for these environment values (``Path.home()`` reads ``HOME``):
    built once, as this runs several times a turn."""
    base = xdg_data_home or os.path.join(Path.home(), ".local", "share")
    return Path(base, "xclaw")


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "xclaw"


def run_output_dir(session_id: str) -> Path:
    """Full tool output of one run (the model only sees head and tail)."""
    return made_dir(Path(data_dir(), "runs", session_id, "output"))


def cache_dir() -> Path:
    """Re-creatable downloads (local model files): the XDG cache dir, never inside a project."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return made_dir(Path(base) / "xclaw")
