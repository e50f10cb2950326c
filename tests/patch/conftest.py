"""A real git repository per test and a hash of its whole tree (fail-closed evidence)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from xclaw.sandbox.host import HostSandbox


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout


def tree_hash(root: Path) -> dict[str, str]:
    """Every file outside .git with its content hash, plus the index and HEAD."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/") or not path.is_file():
            continue
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    out[".git/index"] = hashlib.sha256((root / ".git" / "index").read_bytes()).hexdigest()
    out["HEAD"] = git(root, "rev-parse", "HEAD")
    return out


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = (tmp_path / "repo").resolve()
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def greet():\n    return 'hello'\n")
    (root / "README.md").write_text("# demo\n")
    (root / ".env").write_text("TOKEN=secret\n")
    git(root, "add", "src/app.py", "README.md")
    git(root, "commit", "-q", "-m", "init")
    (root / ".gitignore").write_text(".env\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore")
    return root


@pytest.fixture
def sandbox() -> HostSandbox:
    return HostSandbox()
