"""The job's isolated worktree: create, seed with consented local changes, baseline, remove.

Only ``git worktree add/remove/prune`` touch the user's repository (under .git/worktrees);
the baseline commit and every other write happen inside the worktree.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

from xclaw.dirs import data_dir
from xclaw.patch.gitio import PatchError, git, git_ok
from xclaw.patch.health import HealthReport, check_health
from xclaw.patch.job import PatchLimits, sha256

_IDENTITY = ("-c", "user.name=xclaw", "-c", "user.email=xclaw@localhost")


def worktrees_dir() -> Path:
    path = data_dir() / "patch" / "worktrees"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def file_hash(root: Path, rel: str) -> str | None:
    """SHA-256 of a regular file, None when absent; any other kind gets a marker no hash equals."""
    try:
        st = os.lstat(root / rel)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return f"not-a-regular-file:{stat.S_IFMT(st.st_mode)}"
    return sha256((root / rel).read_bytes())


async def remove_leftovers(repo: Path, owner: str) -> None:
    """Worktrees a crashed job of this project left behind (ours by name) go first."""
    for path in worktrees_dir().glob(f"{owner}-*"):
        await remove_worktree(repo, path)


async def create_worktree(repo: Path, head: str, owner: str, job_id: str) -> Path:
    path = worktrees_dir() / f"{owner}-{job_id}"
    await git_ok(
        repo,
        "worktree",
        "add",
        "--detach",
        "--quiet",
        str(path),
        head,
        code="PATCH_WORKTREE_FAILED",
    )
    return path


async def remove_worktree(repo: Path, path: Path) -> None:
    """Unregister and delete; failures are swallowed because the job's result matters more."""
    await git(repo, "worktree", "remove", "--force", str(path))
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(path)
    await git(repo, "worktree", "prune")


async def seed_local_changes(
    repo: Path, wt: Path, report: HealthReport, limits: PatchLimits
) -> None:
    """Copy the consented local changes in, then check both trees hold the same bytes."""
    diff = await git_ok(
        repo,
        "diff",
        "--binary",
        "--no-ext-diff",
        "--no-textconv",
        "HEAD",
        code="PATCH_SNAPSHOT_FAILED",
    )
    if diff.stdout.strip():
        await git_ok(
            wt,
            "apply",
            "--binary",
            "--whitespace=nowarn",
            "-",
            stdin=diff.stdout,
            code="PATCH_SNAPSHOT_FAILED",
        )
    for rel in report.untracked:
        src = repo / rel
        if not stat.S_ISREG(os.lstat(src).st_mode):
            raise _raced(rel)
        dest = wt / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(src.read_bytes())
    again = await check_health(repo, limits)
    if again.digest != report.digest or again.head != report.head:
        raise _raced("the working tree")
    for rel in [*report.tracked_changed, *report.untracked]:
        if file_hash(repo, rel) != file_hash(wt, rel):
            raise _raced(rel)


async def commit_baseline(
    wt: Path, *, code: str = "PATCH_BASELINE_FAILED", message: str = "xclaw baseline"
) -> str:
    """A commit inside the worktree only: the job's (or worker's) diff is then the agent's
    work alone. ``code`` names a failure for the caller's face."""
    await git_ok(wt, "add", "--all", code=code)
    await git_ok(
        wt,
        *_IDENTITY,
        "commit",
        "--quiet",
        "--no-verify",
        "--allow-empty",
        "-m",
        message,
        code=code,
    )
    done = await git_ok(wt, "rev-parse", "HEAD", code=code)
    return done.text.strip()


def _raced(what: str) -> PatchError:
    return PatchError(
        f"{what} changed while the job copied your local changes.",
        code="PATCH_SNAPSHOT_RACED",
        hint="Wait until nothing else edits the project, then start the job again.",
    )
