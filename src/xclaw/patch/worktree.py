"""The job's isolated worktree: create, seed with the user's bytes, remove (the baseline
commit is ``xclaw.worktree.baseline``'s, shared with the agents' isolated workspaces).

The worktree is a private repository of xclaw's (``private_repo``) that borrows the user's
objects through ``objects/info/alternates``: nothing is written to the user's repository,
not even a worktree registration. Its ``info/attributes`` turns off every content
conversion (eol, text, ident, filters, working-tree-encoding) and diff driver, so checkout,
``git add`` and ``git diff`` there see a file's real bytes, whatever the repository's own
``.gitattributes`` says. The user's tree is then copied over wherever its bytes differ from
the commit's (a CRLF checkout, local changes the user consented to): the job's baseline is
exactly what the user's files hold, so apply and revert can compare raw SHA-256.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from xclaw.dirs import data_dir
from xclaw.patch.health import HealthReport, check_health
from xclaw.patch.job import JobRecord, JobStore, PatchLimits, sha256
from xclaw.tools.atomic import atomic_write_bytes
from xclaw.worktree.gitio import PatchError, git, git_ok

# Highest precedence of all attribute sources: no conversion between blob and file, git's own
# binary detection for diffs (``!diff`` drops a repository's ``-diff`` and diff drivers).
NEUTRAL_ATTRIBUTES = "* -text -ident -filter -working-tree-encoding !diff\n"
_REGULAR_MODES = ("100644", "100755")
_SYMLINK_MODE = "120000"


def worktrees_dir() -> Path:
    path = data_dir() / "patch" / "worktrees"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def worktree_path(store: JobStore, record: JobRecord) -> Path:
    """Where the job's worktree lives while it runs (and stays if its process was killed)."""
    owner = store.lock_path(record.spec.git_root).stem
    return worktrees_dir() / f"{owner}-{record.spec.job_id}"


def file_hash(root: Path, rel: str) -> str | None:
    """SHA-256 of a regular file, None when absent; any other kind gets a marker no hash equals."""
    try:
        st = os.lstat(root / rel)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return f"not-a-regular-file:{stat.S_IFMT(st.st_mode)}"
    return sha256((root / rel).read_bytes())


async def private_repo(path: Path, like: Path, *, borrow: bool = False) -> None:
    """A new repository at ``path`` (created, 0700) with conversions off and the object
    format (sha1, sha256) of the repository ``like``; with ``borrow``, that repository's
    objects are readable through alternates and its ``info/exclude`` ignores the same files."""
    code = "PATCH_WORKTREE_FAILED"
    done = await git_ok(
        like,
        *("rev-parse", "--show-object-format", "--path-format=absolute"),
        *("--git-path", "objects", "--git-path", "info/exclude"),
        code=code,
    )
    object_format, objects, exclude_path = (done.text.rstrip("\n").split("\n") + ["", ""])[:3]
    if object_format not in ("sha1", "sha256") or (borrow and not _borrowable(objects)):
        raise PatchError(
            "The repository's object store has a form git cannot borrow from.", code=code
        )
    os.mkdir(path, 0o700)
    init = ("init", "--quiet", "--template=", f"--object-format={object_format}")
    await git_ok(path, "-c", "init.defaultBranch=xclaw", *init, code=code)
    if borrow:
        _neutral_layout(path / ".git", objects, _read_or_empty(exclude_path))
    else:
        _neutral_layout(path / ".git", "", b"")


def _borrowable(objects: str) -> bool:
    # alternates holds one absolute path per line; a quoted one would be read otherwise.
    return os.path.isabs(objects) and not objects.startswith('"') and os.path.isdir(objects)


def _read_or_empty(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


def _neutral_layout(gitdir: Path, objects: str, exclude: bytes) -> None:
    (gitdir / "info").mkdir(mode=0o700, exist_ok=True)
    (gitdir / "info" / "attributes").write_text(NEUTRAL_ATTRIBUTES)
    if exclude:
        (gitdir / "info" / "exclude").write_bytes(exclude)
    if objects:
        (gitdir / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (gitdir / "objects" / "info" / "alternates").write_text(objects + "\n")


async def remove_leftovers(repo: Path, owner: str) -> None:
    """Worktrees a crashed job of this project left behind (ours by name) go first."""
    for path in worktrees_dir().glob(f"{owner}-*"):
        await remove_worktree(repo, path)


async def create_worktree(repo: Path, head: str, owner: str, job_id: str) -> Path:
    """A private repository checked out at ``head`` with the commit's raw bytes."""
    if not head or head.startswith("-"):
        raise PatchError("HEAD is not a commit id.", code="PATCH_WORKTREE_FAILED")
    path = worktrees_dir() / f"{owner}-{job_id}"
    try:
        await private_repo(path, repo, borrow=True)
        await git_ok(path, "checkout", "--quiet", "--detach", head, code="PATCH_WORKTREE_FAILED")
    except BaseException:
        await asyncio.to_thread(shutil.rmtree, path, True)
        raise
    return path


async def remove_worktree(repo: Path, path: Path) -> None:
    """Delete the worktree; failures are swallowed because the job's result matters more.
    A worktree an older xclaw registered in ``repo`` (``git worktree add``) is unregistered."""
    await asyncio.to_thread(shutil.rmtree, path, True)
    legacy = repo / ".git" / "worktrees" / path.name
    if legacy.is_dir():
        await git(repo, "worktree", "prune")


async def clean_interrupted(record: JobRecord, store: JobStore) -> Path:
    """Remove what an interrupted job left (its worktree) and save it as interrupted."""
    if record.status != "interrupted":
        raise PatchError(
            f"Job {record.spec.job_id} is {record.status}; only an interrupted job is cleaned up.",
            code="PATCH_JOB_STATE",
            hint="See `xclaw patch show JOB`.",
        )
    path = worktree_path(store, record)
    await remove_worktree(Path(record.spec.git_root), path)
    store.save(record)
    return path


# -- the user's bytes into the worktree -------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Entry:
    mode: str
    oid: str


async def seed_local_changes(
    repo: Path, wt: Path, report: HealthReport, limits: PatchLimits
) -> None:
    """Make the worktree hold the user's own bytes: every tracked file whose bytes differ
    from the commit's (a converting checkout, a local edit) and every untracked one is
    copied in, deleted files are deleted; then both trees are checked to still agree."""
    entries = await _index_entries(wt)
    wanted = {rel for rel, e in entries.items() if e.mode in (*_REGULAR_MODES, _SYMLINK_MODE)}
    wanted.update(report.tracked_changed, report.untracked)
    try:
        copied = await asyncio.to_thread(_copy_differing, repo, wt, sorted(wanted), entries)
    except OSError as err:
        raise PatchError(
            f"{err.filename or 'a file'} could not be copied into the job ({err.strerror}).",
            code="PATCH_SNAPSHOT_FAILED",
            hint="Make the project's files readable, then start the job again.",
        ) from None
    again = await check_health(repo, limits)
    if again.digest != report.digest or again.head != report.head:
        raise _raced("the working tree")
    for rel in sorted({*copied, *report.tracked_changed, *report.untracked}):
        if _state(repo, rel) != _state(wt, rel):
            raise _raced(rel)


async def _index_entries(wt: Path) -> dict[str, _Entry]:
    done = await git_ok(wt, "ls-files", "--stage", "-z", code="PATCH_SNAPSHOT_FAILED")
    entries = {}
    for record in done.text.split("\0"):
        meta, _, rel = record.partition("\t")
        fields = meta.split(" ")
        if rel and len(fields) == 3:
            entries[rel] = _Entry(fields[0], fields[1])
    return entries


def _copy_differing(
    repo: Path, wt: Path, paths: list[str], entries: dict[str, _Entry]
) -> list[str]:
    """Deletions first (a file may have become a folder), then the differing files."""
    gone = {rel for rel in paths if _gone(repo / rel)}
    for rel in sorted(gone):
        _remove(wt / rel)
    changed = [rel for rel in paths if rel not in gone and _differs(repo, rel, entries.get(rel))]
    for rel in changed:
        _copy_entry(repo / rel, wt / rel, rel)
    return [*sorted(gone), *changed]


def _gone(path: Path) -> bool:
    """Absent, or a folder now where the commit has a file or link."""
    return not os.path.lexists(path) or (path.is_dir() and not path.is_symlink())


def _differs(repo: Path, rel: str, entry: _Entry | None) -> bool:
    src = repo / rel
    st = os.lstat(src)
    if entry is None:
        return True
    if stat.S_ISLNK(st.st_mode):
        target = os.fsencode(os.readlink(src))
        return entry.mode != _SYMLINK_MODE or _blob_id(target, entry.oid) != entry.oid
    if not stat.S_ISREG(st.st_mode):
        raise _raced(rel)
    executable = bool(st.st_mode & stat.S_IXUSR)
    if executable != (entry.mode == "100755"):
        return True
    return _blob_id(src.read_bytes(), entry.oid) != entry.oid


def _blob_id(data: bytes, like: str) -> str:
    """The git object id of a blob holding ``data``, in the hash of ``like`` (sha1 or 256)."""
    digest = hashlib.sha1 if len(like) == 40 else hashlib.sha256
    h = digest(b"blob %d\0" % len(data), usedforsecurity=False)
    h.update(data)
    return h.hexdigest()


def _copy_entry(src: Path, dest: Path, rel: str) -> None:
    st = os.lstat(src)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISLNK(st.st_mode):
        _remove(dest)
        os.symlink(os.readlink(src), dest)
        return
    if not stat.S_ISREG(st.st_mode):
        raise _raced(rel)
    if os.path.isdir(dest) and not os.path.islink(dest):
        shutil.rmtree(dest)
    mode = 0o755 if st.st_mode & stat.S_IXUSR else 0o644
    atomic_write_bytes(dest, src.read_bytes(), mode=mode, durable=False)


def _remove(path: Path) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _state(root: Path, rel: str) -> tuple[str | None, bool]:
    """Bytes (or a marker) and the executable bit: what must agree between the trees."""
    try:
        executable = bool(os.lstat(root / rel).st_mode & stat.S_IXUSR)
    except FileNotFoundError:
        executable = False
    if os.path.islink(root / rel):
        return f"link:{os.readlink(root / rel)}", False
    return file_hash(root, rel), executable


def _raced(what: str) -> PatchError:
    return PatchError(
        f"{what} changed while the job copied your files.",
        code="PATCH_SNAPSHOT_RACED",
        hint="Wait until nothing else edits the project, then start the job again.",
    )
