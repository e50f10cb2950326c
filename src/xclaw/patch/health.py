"""Worktree health of the user's repository, read with plumbing only (seed 001 §健康检查).

``clean``, ``dirty`` (consent may include the changes) or ``blocked`` (nothing overrides it).
The report is a diagnosis of this moment, not a lock: create, apply and revert read again.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from xclaw.patch.gitio import PatchError, git
from xclaw.patch.job import PatchLimits, sha256

State = Literal["clean", "dirty", "blocked"]
_IN_PROGRESS = {
    "MERGE_HEAD": "a merge",
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase or am",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
    "BISECT_LOG": "a bisect",
}


@dataclass(slots=True)
class HealthReport:
    state: State
    root: Path
    head: str = ""
    digest: str = ""
    reasons: list[str] = field(default_factory=list)
    tracked_changed: list[str] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)


def real_path(path: Path) -> Path:
    return Path(os.path.realpath(path))


async def check_health(root: Path, limits: PatchLimits) -> HealthReport:
    """Read the repository's state; never writes (``GIT_OPTIONAL_LOCKS=0``)."""
    real = real_path(root)
    report = HealthReport("blocked", real)
    top = await git(real, "rev-parse", "--show-toplevel")
    if not top.ok:
        report.reasons.append("the directory is not a git repository")
        return report
    if real_path(Path(top.text.strip())) != real:
        report.reasons.append("the directory is not the top level of its repository")
        return report
    head = await git(real, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if not head.ok:
        report.reasons.append("HEAD does not resolve to a commit")
        return report
    report.head = head.text.strip()
    gitdir = await git(real, "rev-parse", "--absolute-git-dir")
    for marker, what in _IN_PROGRESS.items():
        if gitdir.ok and (Path(gitdir.text.strip()) / marker).exists():
            report.reasons.append(f"{what} is in progress")
    status = await git(
        real, "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignore-submodules=none"
    )
    if not status.ok:
        report.reasons.append("git status failed")
        return report
    _read_status(status.text, report)
    _check_untracked(real, report, limits)
    report.digest = sha256(report.head.encode() + b"\0" + status.stdout)
    if not report.reasons:
        dirty = report.tracked_changed or report.untracked
        report.state = "dirty" if dirty else "clean"
    return report


def _read_status(out: str, report: HealthReport) -> None:
    records = out.split("\0")
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        if not rec:
            continue
        kind = rec[0]
        if kind == "?":
            report.untracked.append(rec[2:])
        elif kind == "u":
            report.reasons.append(f"{rec.split(' ', 10)[-1]} has a merge conflict")
        elif kind in "12":
            fields = rec.split(" ", 8 if kind == "1" else 9)
            if fields[2] != "N...":
                report.reasons.append(f"submodule {fields[-1]} has changes")
            report.tracked_changed.append(fields[-1])
            if kind == "2":
                i += 1  # -z puts the original name of a rename in the next record


def _check_untracked(root: Path, report: HealthReport, limits: PatchLimits) -> None:
    total = 0
    for rel in report.untracked:
        try:
            st = os.lstat(root / rel)
        except OSError:
            report.reasons.append(f"untracked {rel} vanished while it was read")
            continue
        if not stat.S_ISREG(st.st_mode):
            report.reasons.append(f"untracked {rel} is a symlink or not a regular file")
        total += st.st_size
    if len(report.untracked) > limits.max_snapshot_files or total > limits.max_snapshot_bytes:
        report.reasons.append(
            f"local changes exceed the snapshot limits ({limits.max_snapshot_files} files, "
            f"{limits.max_snapshot_bytes} bytes)"
        )


def require_usable(report: HealthReport, *, include_local: bool, consent: bool) -> None:
    """Raise unless a job may start from this state with the user's choices."""
    if report.state == "blocked":
        raise PatchError(
            "The repository cannot be used for a change job: " + "; ".join(report.reasons) + ".",
            code="PATCH_WORKTREE_BLOCKED",
            hint="Finish or abort the git operation, resolve conflicts, or fix the listed items.",
        )
    if report.state == "dirty" and not (include_local and consent):
        raise PatchError(
            f"The working tree has {len(report.tracked_changed)} changed and "
            f"{len(report.untracked)} untracked files.",
            code="PATCH_WORKTREE_DIRTY",
            hint="Commit or set aside your changes yourself, or pass --include-local-changes "
            "to consent to including them in the job's baseline.",
        )
