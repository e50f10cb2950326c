"""Paths named in a command's arguments that need a human: protected files and hard links."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from xclaw.policy.protected import is_protected_rel


def _candidates(arg: str) -> list[str]:
    out = [arg] if not arg.startswith("-") else []
    if "=" in arg:
        out.append(arg.split("=", 1)[1])
    return [c for c in out if c and "\0" not in c]


def protected_arguments(argv: Sequence[str], root: Path, cwd: Path) -> list[tuple[str, str]]:
    """(argument, path relative to the root) for arguments naming a protected file
    (``xclaw.yaml``, ``.git/config``, ``.git/hooks/...``, also of nested repositories)."""
    real_root = os.path.realpath(root)
    found: list[tuple[str, str]] = []
    for arg in argv:
        for cand in _candidates(arg):
            lexical = os.path.normpath(os.path.join(cwd, cand))
            for path in {lexical, _realpath(lexical)}:
                if path is None or not (path == real_root or path.startswith(real_root + "/")):
                    continue
                rel = os.path.relpath(path, real_root)
                if is_protected_rel(rel):
                    found.append((arg, rel))
                    break
            else:
                continue
            break
    return found


def linked_arguments(argv: Sequence[str], root: Path, cwd: Path) -> list[str]:
    """Arguments naming an existing regular file with more than one hard link: its other
    names may lie outside the project, so reading or writing it needs a human."""
    found: list[str] = []
    for arg in argv:
        for cand in _candidates(arg):
            try:
                st = os.stat(os.path.join(cwd, cand), follow_symlinks=False)
            except (OSError, ValueError):
                continue
            if st.st_nlink > 1 and not os.path.isdir(os.path.join(cwd, cand)):
                found.append(arg)
                break
    return found


def _realpath(path: str) -> str | None:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None
