"""Isolated workspaces: a worker that must not collide with others writes in its own tree.

Decision (merging back): an isolated workspace is never merged into the project by xclaw.
When the child finishes, its changes are recorded as one binary git diff against the state it
started from; the parent's result carries the workspace path, the diff's path and the changed
files, so the orchestrator (or the user) reviews the diff and applies it with ``git apply``.

The tree is a ``git worktree`` of the project at HEAD plus the project's uncommitted changes
(tracked diff and untracked, non-ignored files) when the project is a git repository with a
commit, else a copy of the project without ``.git``; either way a baseline commit inside it
makes the diff the worker's work alone. Workspaces live in the data dir under
``agents/workspaces/<child session id>/`` (``tree/`` the files, ``base`` the baseline commit,
``changes.diff`` the diff) and stay after the run (their paths are artifact pointers); a
resumed child reuses its workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from xclaw.dirs import data_dir
from xclaw.tools.atomic import atomic_write_bytes
from xclaw.worktree.baseline import commit_baseline
from xclaw.worktree.gitio import PatchError, git, git_ok


def workspaces_dir() -> Path:
    path = data_dir() / "agents" / "workspaces"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def child_dir(child_id: str) -> Path:
    return workspaces_dir() / child_id


@dataclass(frozen=True, slots=True)
class Changes:
    tree: Path
    diff_path: Path
    files: list[str]


class IsolatedWorkspaces:
    """Creates workspaces one at a time (``git worktree add`` on one repository is not
    meant to race with itself) and computes their diffs."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    async def prepare(self, project: Path, child_id: str) -> Path:
        home = child_dir(child_id)
        path, base_file = home / "tree", home / "base"
        async with self._lock:
            if path.is_dir() and base_file.exists():
                return path  # a resumed child keeps its tree
            await _discard(project, path)
            home.mkdir(mode=0o700, exist_ok=True)
            if await _has_head(project):
                await git_ok(
                    project,
                    "worktree",
                    "add",
                    "--detach",
                    "--quiet",
                    str(path),
                    "HEAD",
                    code="AGENTS_WORKSPACE_FAILED",
                )
                await _seed_local_changes(project, path)
            else:
                await asyncio.to_thread(_copy_project, project, path)
                await git_ok(path, "init", "--quiet", code="AGENTS_WORKSPACE_FAILED")
            base = await commit_baseline(
                path, code="AGENTS_WORKSPACE_FAILED", message="xclaw agents baseline"
            )
            atomic_write_bytes(base_file, base.encode())
        return path

    async def changes(self, child_id: str) -> Changes:
        home = child_dir(child_id)
        path = home / "tree"
        base = (home / "base").read_text().strip()
        await git_ok(path, "add", "--all", code="AGENTS_DIFF_FAILED")
        diff = await git_ok(
            path, "diff", "--cached", "--binary", "--no-ext-diff", base, code="AGENTS_DIFF_FAILED"
        )
        names = await git_ok(
            path, "diff", "--cached", "--name-only", "-z", base, code="AGENTS_DIFF_FAILED"
        )
        diff_path = home / "changes.diff"
        atomic_write_bytes(diff_path, diff.stdout, mode=0o600)
        files = [n for n in names.stdout.decode("utf-8", "replace").split("\0") if n]
        return Changes(path, diff_path, files)


async def _has_head(project: Path) -> bool:
    inside = await git(project, "rev-parse", "--is-inside-work-tree")
    if not inside.ok or inside.text.strip() != "true":
        return False
    return (await git(project, "rev-parse", "--verify", "--quiet", "HEAD")).ok


async def _seed_local_changes(project: Path, wt: Path) -> None:
    diff = await git_ok(
        project, "diff", "--binary", "--no-ext-diff", "HEAD", code="AGENTS_WORKSPACE_FAILED"
    )
    if diff.stdout.strip():
        await git_ok(
            wt, "apply", "--binary", "-", stdin=diff.stdout, code="AGENTS_WORKSPACE_FAILED"
        )
    others = await git_ok(
        project, "ls-files", "--others", "--exclude-standard", "-z", code="AGENTS_WORKSPACE_FAILED"
    )
    for rel in others.stdout.decode("utf-8", "replace").split("\0"):
        src = project / rel
        if not rel or not stat.S_ISREG(os.lstat(src).st_mode):
            continue  # links and special files are not copied out of the project
        dest = wt / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)


def _copy_project(project: Path, path: Path) -> None:
    # symlinks=True: a link is copied as a link, never followed out of the project.
    shutil.copytree(project, path, symlinks=True, ignore=shutil.ignore_patterns(".git"))


async def _discard(project: Path, path: Path) -> None:
    """A tree a crash left half-made (no baseline yet) is removed before trying again."""
    if not await asyncio.to_thread(os.path.lexists, path):
        return
    with contextlib.suppress(PatchError):
        await git(project, "worktree", "remove", "--force", str(path))
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(path)
    await git(project, "worktree", "prune")
