"""Which worktree paths the patch tools may read or change, decided from the text alone.

Protected: git metadata (``.git``, and ``.gitmodules``, which would make folders submodules
the change set cannot carry), environment files, keys and credentials, lockfiles, dependency
and build folders. A path that fails any rule is denied with one uniform code that never says
why.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection
from pathlib import Path, PurePosixPath

from xclaw.core.errors import PolicyDenied

MAX_PATH_CHARS = 1024
_LOCKFILES = frozenset(
    {
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "poetry.lock",
        "uv.lock",
        "pipfile.lock",
        "cargo.lock",
        "gemfile.lock",
        "composer.lock",
        "go.sum",
    }
)
_PROTECTED_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build", ".ssh", ".gnupg"}
)
_GIT_METADATA = frozenset({".git", ".gitmodules"})
_KEY_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".crt", ".der")
_KEY_NAMES = re.compile(
    r"^(id_(rsa|dsa|ecdsa|ed25519)(\.pub)?|\.netrc|\.npmrc|\.pypirc|credentials)$"
)
_DEPENDENCY_MANIFESTS = frozenset(
    {"package.json", "pyproject.toml", "requirements.txt", "cargo.toml", "go.mod", "gemfile"}
)


def path_denied() -> PolicyDenied:
    """The one answer for any unusable path: nothing about missing, protected or outside."""
    return PolicyDenied(
        "That path is not available.",
        code="TOOL_PATH_DENIED",
        hint="Pick a path returned by list_files or search_text; do not retry this one.",
    )


def normalize_rel(raw: str, editable: Collection[str] = ()) -> str:
    """A clean relative POSIX path, or ``TOOL_PATH_DENIED``; ``editable`` names lockfiles the
    user's configuration lets jobs change (``patch: {editable_lockfiles: [...]}``)."""
    if (
        not raw
        or len(raw) > MAX_PATH_CHARS
        or "\0" in raw
        or "\\" in raw
        or "%" in raw
        or raw.startswith("/")
        or re.match(r"^[A-Za-z]:", raw)
        or "://" in raw
    ):
        raise path_denied()
    parts = [p for p in PurePosixPath(raw).parts if p != "."]
    if not parts or any(p == ".." for p in parts):
        raise path_denied()
    rel = "/".join(parts)
    if is_protected(rel, editable):
        raise path_denied()
    return rel


def is_protected(rel: str, editable: Collection[str] = ()) -> bool:
    parts = rel.split("/")
    name = parts[-1].lower()
    if any(p.lower() in _PROTECTED_DIRS for p in parts[:-1]) or name in _GIT_METADATA:
        return True
    if name in _LOCKFILES and name not in editable:
        return True
    if name.startswith(".env") or _KEY_NAMES.match(name):
        return True
    return name.endswith(_KEY_SUFFIXES) or name == "xclaw.yaml"


def is_dependency_manifest(rel: str) -> bool:
    """Changing it means installing: auto mode never applies it unattended (lockfiles too)."""
    name = rel.split("/")[-1].lower()
    return name in _DEPENDENCY_MANIFESTS or name in _LOCKFILES or is_protected(rel)


def editable_lockfiles(names: Collection[str]) -> tuple[str, ...]:
    """The configured names that really are lockfiles (anything else stays as protected)."""
    return tuple(sorted({n.lower() for n in names if n.lower() in _LOCKFILES}))


def regular_file(root: Path, rel: str) -> Path:
    """``root/rel`` when every component is a real directory and the leaf a regular file."""
    current = root
    for part in rel.split("/")[:-1]:
        current = current / part
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                raise path_denied()
        except OSError:
            raise path_denied() from None
    target = current / rel.split("/")[-1]
    try:
        st = os.lstat(target)
    except OSError:
        raise path_denied() from None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        raise path_denied()
    return target


def is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
