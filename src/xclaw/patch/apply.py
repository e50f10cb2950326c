"""Apply a finished job to the user's working tree, or revert it, verified by hashes.

Both re-read the repository first (HEAD, blocked git states) and require every touched path
to hold exactly the expected bytes. The new bytes are worked out away from the user's tree:
the job's diff is applied with ``git apply`` in a scratch repository of xclaw's (no
conversion, no attributes, no user configuration) seeded with the touched files, and must
give exactly the job's result hashes (its baseline, for revert) and no other path. Only then
are the files written, directly and atomically, and the user's tree read again: every touched
file must hold the expected SHA-256 and no other path may have changed (``git status`` and the
hashes of what it lists, before and after). Otherwise everything written is put back and the
call fails with its code. The index is never touched; nothing is committed, reset or switched.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from xclaw.patch.health import check_health, real_path, status_records
from xclaw.patch.job import JobRecord, sha256
from xclaw.patch.worktree import file_hash, private_repo, worktrees_dir
from xclaw.tools.atomic import atomic_write_bytes
from xclaw.worktree.gitio import PatchError, git

Hashes = dict[str, str | None]
View = dict[str, tuple[str, str | None]]  # path -> (its git status record, its hash)


@dataclass(frozen=True, slots=True)
class FileState:
    """What one path holds: its bytes and permission bits, or nothing (``data`` None)."""

    data: bytes | None
    mode: int = 0o644

    @property
    def digest(self) -> str | None:
        return None if self.data is None else sha256(self.data)


async def apply_record(record: JobRecord) -> None:
    """review → applied; the files then hold the job's result hashes, nothing else moved."""
    if record.status != "review":
        raise _wrong_status(record, "apply", "review")
    root = await _require_same_repo(record)
    await _rewrite_verified(root, record, record.baseline_hashes, record.result_hashes, "")
    record.applied_hashes = dict(record.result_hashes)
    record.status = "applied"


async def revert_record(record: JobRecord) -> None:
    """applied → reverted: the touched paths return to the baseline bytes."""
    if record.status != "applied":
        raise _wrong_status(record, "revert", "applied")
    root = await _require_same_repo(record)
    await _rewrite_verified(root, record, record.applied_hashes, record.baseline_hashes, "-R")
    record.status = "reverted"


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


async def _rewrite_verified(
    root: Path, record: JobRecord, now: Hashes, wanted: Hashes, reverse: str
) -> None:
    """Move the touched paths from ``now`` to ``wanted`` or leave the tree as it was."""
    paths = record.touched
    if set(now) != set(paths) or set(wanted) != set(paths):
        raise _mismatch("its hash lists name different files")
    for rel in paths:
        _require_plain_path(root, rel)
    _require_hashes(root, now)
    before = await outside_view(root, paths)
    current = {rel: read_state(root, rel) for rel in paths}
    target = await _worked_out(root, record.diff, current, reverse)
    wrong = [rel for rel in paths if target[rel].digest != wanted[rel]]
    if wrong:
        raise _mismatch(f"its diff does not give its hashes for {', '.join(wrong[:5])}")
    try:
        write_states(root, target)
        problem = await _verify_written(root, wanted, before)
    except BaseException:
        _restore(root, current, target)
        raise
    if problem:
        _restore(root, current, target)
        raise PatchError(
            f"{problem}; the job's files were put back as they were.",
            code="PATCH_APPLY_UNVERIFIED",
            hint="Something else wrote the project at the same time, or it rewrites files "
            "(a formatter on save). Try again when it is idle.",
        )


async def _verify_written(root: Path, wanted: Hashes, before: View) -> str:
    """What is wrong with the tree after writing, or "" when it is exactly as expected."""
    wrong = [rel for rel in sorted(wanted) if file_hash(root, rel) != wanted[rel]]
    if wrong:
        return f"After writing, {', '.join(wrong[:5])} did not hold the expected bytes"
    after = await outside_view(root, sorted(wanted))
    moved = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if moved:
        return f"{', '.join(moved[:5])}, outside the job, changed while it was written"
    return ""


def _require_plain_path(root: Path, rel: str) -> None:
    """A relative path below ``root`` through real folders only: a link on the way would
    send the write (or the hash) somewhere else."""
    parts = PurePosixPath(rel).parts
    bad = not parts or rel.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts)
    here = root
    for part in parts[:-1]:
        here = here / part
        if bad or not os.path.lexists(here):
            break
        bad = not stat.S_ISDIR(os.lstat(here).st_mode)
    if bad or "\0" in rel:
        raise PatchError(
            f"{rel} does not lead to a plain file inside the project (a link or file is on "
            "the way).",
            code="PATCH_PATH_UNSAFE",
            hint="Nothing was written. Restore the folder, or start a new job.",
        )


def _require_hashes(root: Path, expected: Hashes) -> None:
    moved = [rel for rel, digest in expected.items() if file_hash(root, rel) != digest]
    if moved:
        raise PatchError(
            f"{len(moved)} touched files differ from what the job expects: "
            f"{', '.join(sorted(moved)[:5])}.",
            code="PATCH_CONFLICT",
            hint="Someone edited them meanwhile; nothing was written. Handle it by hand or "
            "start a new job.",
        )


async def outside_view(root: Path, paths: list[str]) -> View:
    """Every path ``git status`` lists but ``paths``, with its record and its hash (a second
    edit of an already changed file shows only in the hash)."""
    done = await git(
        root, "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignore-submodules=none"
    )
    if not done.ok:
        raise PatchError("git status failed.", code="PATCH_WORKTREE_BLOCKED")
    skip = set(paths)
    view: View = {}
    for rec, names in status_records(done.text):
        if skip.isdisjoint(names):
            view.update((name, (rec, _hash_or_marker(root, name))) for name in names)
    return view


def _hash_or_marker(root: Path, rel: str) -> str | None:
    try:
        return file_hash(root, rel)
    except OSError as err:
        return f"unreadable:{err.errno}"


def read_state(root: Path, rel: str) -> FileState:
    path = root / rel
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return FileState(None)
    return FileState(path.read_bytes(), stat.S_IMODE(st.st_mode))


async def _worked_out(
    root: Path, diff: str, current: dict[str, FileState], reverse: str
) -> dict[str, FileState]:
    """The touched files after the diff, from a scratch repository holding only them."""
    if not diff.strip():
        return dict(current)
    with tempfile.TemporaryDirectory(dir=worktrees_dir(), prefix="apply-") as tmp:
        scratch = Path(tmp) / "tree"
        await private_repo(scratch, root)
        write_states(scratch, current, durable=False)
        data = diff.encode("utf-8")
        named = await _paths_named(scratch, data)
        if not named <= set(current):
            raise _mismatch(f"its diff also names {', '.join(sorted(named - set(current))[:5])}")
        args = ("apply", *([reverse] if reverse else []), "--whitespace=nowarn", "-")
        done = await git(scratch, *args, stdin=data)
        if not done.ok:
            raise PatchError(
                "The change no longer applies cleanly.",
                code="PATCH_CONFLICT",
                hint="Nothing was written; start a new job on the current files.",
            )
        extra = sorted(set(_files_below(scratch)) - set(current))
        if extra:
            raise _mismatch(f"its diff also writes {', '.join(extra[:5])}")
        return {rel: _keep_bits(current[rel], read_state(scratch, rel)) for rel in current}


async def _paths_named(scratch: Path, diff: bytes) -> set[str]:
    """Every path the diff would create, change or delete, as git apply reads it."""
    done = await git(scratch, "apply", "--numstat", "-z", "-", stdin=diff)
    if not done.ok:
        raise _mismatch("git apply cannot read its diff")
    named = set()
    # "added<TAB>deleted<TAB>path" per file; a rename or copy leaves the path empty and gives
    # both names as the next two fields.
    for field in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        path = field.split("\t", 2)[-1]
        if path:
            named.add(path)
    return named


def _keep_bits(before: FileState, after: FileState) -> FileState:
    """git apply writes a new file with the umask's bits; an existing file keeps its own
    (0600 stays 0600) and takes only the executable bit from the diff."""
    if before.data is None or after.data is None:
        return after
    if after.mode & stat.S_IXUSR:
        return FileState(after.data, before.mode | ((before.mode & 0o444) >> 2))
    return FileState(after.data, before.mode & ~0o111)


def _files_below(root: Path) -> list[str]:
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (folder == str(root) and d == ".git")]
        out.extend(Path(folder, f).relative_to(root).as_posix() for f in files)
    return out


def write_states(root: Path, states: dict[str, FileState], *, durable: bool = True) -> None:
    """Make each path hold its state: atomic replacement, deletion (empty folders go too, as
    with ``git apply``)."""
    for rel, state in states.items():
        path = root / rel
        if state.data is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            _prune_empty_parents(root, path.parent)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, state.data, mode=state.mode, durable=durable)


def _prune_empty_parents(root: Path, folder: Path) -> None:
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _restore(root: Path, before: dict[str, FileState], written: dict[str, FileState]) -> None:
    """Put back what the touched paths held, where they still hold what was written (a
    path someone else wrote meanwhile is left to them, and named)."""
    ours = {}
    others = []
    for rel, state in before.items():
        now = read_state(root, rel).digest
        if now == written[rel].digest and now != state.digest:
            ours[rel] = state
        elif now != state.digest:
            others.append(rel)
    try:
        write_states(root, ours)
    except OSError as err:
        others.extend(sorted(ours))
        reason = err.strerror or type(err).__name__
    else:
        reason = "someone else wrote them meanwhile"
    if others:
        raise PatchError(
            f"Writing failed, and {', '.join(sorted(others)[:5])} could not be put back "
            f"({reason}).",
            code="PATCH_ROLLBACK_FAILED",
            hint="Compare those files with `git diff` and fix them by hand.",
        )


def _mismatch(what: str) -> PatchError:
    return PatchError(
        f"The job's stored change is inconsistent: {what}.",
        code="PATCH_RESULT_MISMATCH",
        hint="Nothing was written. Start a new job.",
    )


def _wrong_status(record: JobRecord, action: str, needed: str) -> PatchError:
    return PatchError(
        f"Job {record.spec.job_id} is {record.status}; only a {needed} job can {action}.",
        code="PATCH_JOB_STATE",
        hint="See `xclaw patch show JOB`.",
    )
