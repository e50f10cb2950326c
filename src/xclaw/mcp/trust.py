"""The user's consent to a project's MCP servers, kept in xclaw's data dir (never the project).

Consent covers one exact definition: a project (or a model writing its ``.mcp.json``) that
changes a trusted server's command, arguments, environment or address loses that trust.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from xclaw.dirs import data_dir
from xclaw.tools.atomic import atomic_write_bytes


def trust_file() -> Path:
    return data_dir() / "mcp-trust.json"


def _load() -> dict[str, dict[str, str]]:
    try:
        data: Any = json.loads(trust_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(root): {str(k): str(v) for k, v in names.items()}
        for root, names in data.items()
        if isinstance(names, dict)
    }


def _key(root: Path) -> str:
    return os.path.realpath(root)


def is_trusted(root: Path, name: str, fingerprint: str) -> bool:
    return _load().get(_key(root), {}).get(name) == fingerprint


def trust(root: Path, name: str, fingerprint: str) -> None:
    data = _load()
    data.setdefault(_key(root), {})[name] = fingerprint
    _save(data)


def revoke(root: Path, name: str) -> bool:
    data = _load()
    removed = data.get(_key(root), {}).pop(name, None) is not None
    if removed:
        _save(data)
    return removed


def _save(data: dict[str, dict[str, str]]) -> None:
    atomic_write_bytes(
        trust_file(), (json.dumps(data, indent=2, sort_keys=True) + "\n").encode(), mode=0o600
    )
