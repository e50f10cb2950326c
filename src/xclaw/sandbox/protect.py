"""Files inside the project that a command must not change: they run code or configure xclaw.

``.git/config`` and ``.git/hooks`` (of the project's repository and of repositories nested in
it) decide what the user's own later ``git`` commands run, with the user's credentials;
``xclaw.yaml`` decides how xclaw itself behaves. Existing ones are mounted read-only in the
sandbox. One that did not exist yet cannot be mounted without creating it, so ``guard_new``
checks after each command and moves a freshly created one aside (kept, never deleted).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

AGENT_CONFIG = "xclaw.yaml"
GIT_PROTECTED = ("config", "config.worktree", "hooks", "modules")
_SCAN_SKIP = frozenset({"node_modules", ".venv", "venv", "__pycache__", "target", "dist", "build"})
_SCAN_DEPTH = 3
_SCAN_DIRS = 400
# Config keys whose value git runs as a command (or that pull in other config).
GIT_EXEC_KEY = re.compile(
    r"^\s*(?:fsmonitor|hookspath|pager|editor|sshcommand|askpass|gitproxy|textconv|command"
    r"|cmd|program|helper|receivepack|uploadpack|external|path|clean|smudge|process)\s*=",
    re.IGNORECASE | re.MULTILINE,
)


def is_protected_rel(rel: str) -> bool:
    """True for a project-relative path the model may only write with a human's approval."""
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if parts == [AGENT_CONFIG]:
        return True
    for i, part in enumerate(parts):
        if part == ".git" and (i + 1 == len(parts) or parts[i + 1] in GIT_PROTECTED):
            return True
    return False


def git_dirs(root: Path) -> list[Path]:
    """The project's ``.git`` folder and those of repositories nested a few levels down."""
    found: list[Path] = []
    queue = [(root, 0)]
    visited = 0
    while queue and visited < _SCAN_DIRS:
        folder, depth = queue.pop(0)
        visited += 1
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if entry.name == ".git":
                found.append(Path(entry.path))
            elif depth < _SCAN_DEPTH and entry.name not in _SCAN_SKIP:
                queue.append((Path(entry.path), depth + 1))
    return found


def read_only_paths(root: Path) -> tuple[list[Path], list[Path]]:
    """(the ``.git`` folders, the existing protected paths) under ``root``, resolved and
    only when still inside it. A ``.git`` folder is mounted onto itself so that it cannot be
    renamed away and replaced by one with another config."""
    out: list[Path] = []
    candidates = [root / AGENT_CONFIG]
    gits = git_dirs(root)
    for git in gits:
        candidates.extend(git / name for name in GIT_PROTECTED)
    for path in candidates:
        if not os.path.lexists(path):
            continue
        real = Path(os.path.realpath(path))
        if real == root or root in real.parents:
            out.append(real)
    return [g for g in gits if not g.is_symlink()], out


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Which root-level protected paths existed before a command."""

    agent_config: bool
    git: bool


def snapshot(root: Path) -> Snapshot:
    return Snapshot(os.path.lexists(root / AGENT_CONFIG), os.path.lexists(root / ".git"))


def guard_new(root: Path, before: Snapshot) -> list[str]:
    """Move aside protected files a command created; returns a note per file moved."""
    notes: list[str] = []
    stamp = time.strftime("%Y%m%d%H%M%S")
    if not before.agent_config and os.path.lexists(root / AGENT_CONFIG):
        notes.append(_move_aside(root / AGENT_CONFIG, stamp))
    if not before.git and os.path.isdir(root / ".git"):
        notes.extend(_defuse_new_repo(root / ".git", stamp))
    return notes


def _defuse_new_repo(git: Path, stamp: str) -> list[str]:
    """A repository the command created may keep its plain config and sample hooks; a config
    that runs programs or a hook that would run is moved aside."""
    notes: list[str] = []
    config = git / "config"
    try:
        text = config.read_text(errors="replace") if config.is_file() else ""
    except OSError:
        text = ""
    if GIT_EXEC_KEY.search(text) or os.path.islink(config):
        notes.append(_move_aside(config, stamp))
    hooks = git / "hooks"
    if hooks.is_dir() and not hooks.is_symlink():
        for hook in sorted(hooks.iterdir()):
            if not hook.name.endswith(".sample") and not hook.name.endswith(".xclaw-rejected"):
                notes.append(_move_aside(hook, stamp))
    elif os.path.lexists(hooks):
        notes.append(_move_aside(hooks, stamp))
    return notes


def _move_aside(path: Path, stamp: str) -> str:
    target = path.with_name(f"{path.name}.{stamp}.xclaw-rejected")
    try:
        os.rename(path, target)
    except OSError as err:
        return f"{path} is protected and could not be moved aside ({err.strerror})"
    return f"{path.name} is protected: the command's version was moved to {target}"
