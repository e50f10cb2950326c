"""Apply a finished job to the user's working tree, or revert it, verified by hashes.

Both re-read the repository first (HEAD, blocked git states), require every touched path to
hold exactly the expected bytes, run ``git apply --check`` before ``git apply``, and never
touch the index, commit, reset or switch branches. Unrelated paths are never compared.
"""

from __future__ import annotations

from pathlib import Path

from xclaw.patch.gitio import PatchError, git
from xclaw.patch.health import check_health, real_path
from xclaw.patch.job import JobRecord
from xclaw.patch.worktree import file_hash


async def _require_same_repo(record: JobRecord) -> Path:
    spec = record.spec
    root = real_path(Path(spec.git_root))
    report = await check_health(root, spec.limits)
    blocking = [r for r in report.reasons if "snapshot limits" not in r]
    if blocking:
        raise PatchError(
            "The repository is in a state that blocks writing: " + "; ".join(blocking) + ".",
            code="PATCH_WORKTREE_BLOCKED",
            hint="Finish or abort the git operation, then try again.",
        )
    if report.head != spec.head:
        raise PatchError(
            "HEAD moved since the job started.",
            code="PATCH_HEAD_CHANGED",
            hint="Start a new job on the current HEAD.",
        )
    return root


def _require_hashes(root: Path, expected: dict[str, str | None], what: str) -> None:
    moved = [rel for rel, digest in expected.items() if file_hash(root, rel) != digest]
    if moved:
        raise PatchError(
            f"{len(moved)} touched files differ from {what}: {', '.join(sorted(moved)[:5])}.",
            code="PATCH_CONFLICT",
            hint="Someone edited them meanwhile; nothing was written. Handle it by hand or "
            "start a new job.",
        )


async def _git_apply(root: Path, diff: str, *reverse: str) -> None:
    data = diff.encode("utf-8")
    check = await git(root, "apply", *reverse, "--check", "--whitespace=nowarn", "-", stdin=data)
    if not check.ok:
        raise PatchError(
            "The change no longer applies cleanly.",
            code="PATCH_CONFLICT",
            hint="Nothing was written; start a new job on the current files.",
        )
    done = await git(root, "apply", *reverse, "--whitespace=nowarn", "-", stdin=data)
    if not done.ok:
        raise PatchError(
            "git apply failed after its check passed.",
            code="PATCH_APPLY_FAILED",
            hint="Inspect the touched files with `git diff`.",
        )


async def apply_record(record: JobRecord) -> None:
    """review → applied; records the post-apply hashes used by revert."""
    if record.status != "review":
        raise _wrong_status(record, "apply", "review")
    root = await _require_same_repo(record)
    _require_hashes(root, record.baseline_hashes, "the job's baseline")
    if record.diff:
        await _git_apply(root, record.diff)
    record.applied_hashes = {rel: file_hash(root, rel) for rel in record.baseline_hashes}
    record.status = "applied"


async def revert_record(record: JobRecord) -> None:
    """applied → reverted: the touched paths return to the baseline bytes."""
    if record.status != "applied":
        raise _wrong_status(record, "revert", "applied")
    root = await _require_same_repo(record)
    _require_hashes(root, record.applied_hashes, "what the job applied")
    if record.diff:
        await _git_apply(root, record.diff, "-R")
    _require_hashes(root, record.baseline_hashes, "the baseline after reverting")
    record.status = "reverted"


def _wrong_status(record: JobRecord, action: str, needed: str) -> PatchError:
    return PatchError(
        f"Job {record.spec.job_id} is {record.status}; only a {needed} job can {action}.",
        code="PATCH_JOB_STATE",
        hint="See `xclaw patch show JOB`.",
    )
