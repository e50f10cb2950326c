"""The baseline commit of an isolated tree: what its diff is taken against."""

from __future__ import annotations

from pathlib import Path

from xclaw.worktree.gitio import git_ok

_IDENTITY = ("-c", "user.name=xclaw", "-c", "user.email=xclaw@localhost")


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
