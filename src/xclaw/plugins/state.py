"""Which plugins the user enabled, and their config: ``<config dir>/plugins.json``.

Only the user writes this file (through ``xclaw plugins``); a project file never can, so a
project or a model cannot enable code. A project plugin is enabled for one project folder and
for the exact content the user saw: any later change to its files disables it again.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xclaw.core.errors import ConfigError
from xclaw.dirs import config_dir
from xclaw.tools.atomic import atomic_write_bytes

STATE_FILE = "plugins.json"
_DIGEST_SKIP = {"__pycache__", ".git"}


def state_path() -> Path:
    return config_dir() / STATE_FILE


def project_key(root: Path, plugin_id: str) -> str:
    return f"project:{os.path.realpath(root)}#{plugin_id}"


def folder_digest(folder: Path) -> str:
    """sha256 over every file's relative path and bytes (symlinks by their target text)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _DIGEST_SKIP)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            h.update(rel.encode() + b"\0")
            if path.is_symlink():
                h.update(b"link:" + os.readlink(path).encode())
            else:
                h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


@dataclass(slots=True)
class PluginState:
    """``enabled``: key → bool (user and entry-point plugins by id, project ones by
    ``project_key``); ``digests``: project key → content digest; ``config``: id → mapping."""

    enabled: dict[str, bool] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)
    config: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: Path | None = None

    @classmethod
    def load(cls, path: Path | None = None) -> PluginState:
        path = path or state_path()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path=path)
        except (OSError, ValueError) as err:
            raise ConfigError(
                f"{path} is not readable JSON: {err}",
                code="PLUGIN_STATE_INVALID",
                hint=f"Fix or delete {path}; `xclaw plugins enable` writes it again.",
            ) from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path} must hold a JSON object.", code="PLUGIN_STATE_INVALID")
        return cls(
            {str(k): bool(v) for k, v in dict(data.get("enabled") or {}).items()},
            {str(k): str(v) for k, v in dict(data.get("digests") or {}).items()},
            {str(k): dict(v) for k, v in dict(data.get("config") or {}).items()},
            path,
        )

    def save(self) -> None:
        path = self.path or state_path()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        body = {"enabled": self.enabled, "digests": self.digests, "config": self.config}
        atomic_write_bytes(path, json.dumps(body, indent=2, sort_keys=True).encode(), mode=0o600)
