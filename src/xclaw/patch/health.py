"""Worktree health of the user's repository, read with plumbing only (seed 001 §健康检查).

Git reads it the neutral way of ``gitio.git``: the user's and system configuration play no
part, so the same repository gives the same report whoever runs it.

``clean``, ``dirty`` (consent may include the changes) or ``blocked`` (nothing overrides it).
The report is a diagnosis of this moment, not a lock: create, apply and revert read again.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from xclaw.patch.job import PatchLimits, sha256
from xclaw.worktree.gitio import PatchError, git

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
    records = await local_changes(real)
    if records is None:
        report.reasons.append("git status failed")
        return report
    _read_status(records, report)
    _check_untracked(real, report, limits)
    listed = "\0".join(rec for rec, _ in records).encode("utf-8", "surrogateescape")
    report.digest = sha256(report.head.encode() + b"\0" + listed)
    if not report.reasons:
        dirty = report.tracked_changed or report.untracked
        report.state = "dirty" if dirty else "clean"
    return report


def status_records(out: str) -> Iterator[tuple[str, list[str]]]:
    """Each record of ``git status --porcelain=v2 -z`` with the paths it names; a rename
    names two (``-z`` puts the original name in the next field)."""
    records = out.split("\0")
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        kind = rec[:1]
        if kind in ("?", "!"):
            yield rec, [rec[2:]]
        elif kind == "u":
            yield rec, [rec.split(" ", 10)[-1]]
        elif kind == "1":
            yield rec, [rec.split(" ", 8)[-1]]
        elif kind == "2":
            original = records[i] if i < len(records) else ""
            i += 1
            yield rec, [rec.split(" ", 9)[-1], original]


async def local_changes(root: Path) -> list[tuple[str, list[str]]] | None:
    """``git status`` records of the user's tree (None when it fails), less the files that
    differ from the commit only by CRLF line ends: that is how a checkout with the user's
    own ``core.autocrlf`` writes them, which xclaw's neutral git reads as an edit."""
    status = await git(
        root, "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignore-submodules=none"
    )
    if not status.ok:
        return None
    records = list(status_records(status.text))
    suspects = {names[0]: rec.split(" ", 8)[7] for rec, names in records if _worktree_only(rec)}
    converted = await _crlf_checkouts(root, suspects) if suspects else set()
    return [(rec, names) for rec, names in records if names[0] not in converted]


def _worktree_only(rec: str) -> bool:
    """A plain file changed in the working tree only (index and HEAD agree)."""
    fields = rec.split(" ", 8)
    return rec.startswith("1 .M N... ") and len(set(fields[3:6])) == 1 and fields[3] != "160000"


async def _crlf_checkouts(root: Path, suspects: dict[str, str]) -> set[str]:
    """Those of ``suspects`` (path -> index blob) whose bytes are the blob with LF -> CRLF."""
    batch = "".join(f"{oid}\n" for oid in suspects.values()).encode()
    done = await git(root, "cat-file", "--batch", stdin=batch)
    if not done.ok:
        return set()
    blobs = _batch_contents(done.stdout)
    same = set()
    for rel, oid in suspects.items():
        blob = blobs.get(oid)
        if blob is None or b"\r" in blob or b"\n" not in blob:
            continue
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        if data == blob.replace(b"\n", b"\r\n"):
            same.add(rel)
    return same


def _batch_contents(out: bytes) -> dict[str, bytes]:
    """``git cat-file --batch`` output: ``<oid> <type> <size>\\n<content>\\n`` per object."""
    found: dict[str, bytes] = {}
    pos = 0
    while pos < len(out):
        end = out.find(b"\n", pos)
        if end < 0:
            break
        header = out[pos:end].split(b" ")
        if len(header) != 3 or not header[2].isdigit():
            pos = end + 1  # "<oid> missing": no content follows
            continue
        size = int(header[2])
        found[header[0].decode()] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return found


def _read_status(records: list[tuple[str, list[str]]], report: HealthReport) -> None:
    for rec, paths in records:
        kind = rec[0]
        if kind == "?":
            report.untracked.extend(paths)
        elif kind == "u":
            report.reasons.append(f"{paths[0]} has a merge conflict")
        elif kind in "12":
            if rec.split(" ", 3)[2] != "N...":
                report.reasons.append(f"submodule {paths[0]} has changes")
            report.tracked_changed.extend(paths)


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
