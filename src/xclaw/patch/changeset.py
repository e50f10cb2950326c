"""The job's changeset relative to its baseline, and the rules it must pass as a whole.

Any violation fails the whole job: a bad file is never dropped to apply the rest. A write the
changeset could not carry is refused before it happens (``refuse_uncarried_writes``): a path
the repository ignores (``PATCH_PATH_IGNORED``; ``git add`` would leave it out), one inside a
submodule or nested repository (``PATCH_PATH_IN_SUBMODULE``; git records only the other
repository's commit) and protected paths such as ``.gitmodules`` (``TOOL_PATH_DENIED``).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from xclaw.core.errors import ToolError
from xclaw.patch.job import PatchLimits, sha256
from xclaw.patch.paths import is_dependency_manifest, is_text, normalize_rel
from xclaw.patch.session import PatchSession
from xclaw.patch.worktree import file_hash
from xclaw.worktree.gitio import PatchError, git, git_ok

_ALLOWED_MODES = {"000000", "100644", "100755"}


@dataclass(slots=True)
class Changeset:
    diff: str
    baseline: dict[str, str | None] = field(default_factory=dict)
    result: dict[str, str | None] = field(default_factory=dict)
    deletes: bool = False
    manifests: bool = False
    made_executable: bool = False  # a file newly executable: seed 001 keeps it for review
    added: int = 0
    removed: int = 0

    @property
    def summary(self) -> str:
        return f"{len(self.result)} files changed, +{self.added} -{self.removed}"


def invalid(reason: str) -> PatchError:
    return PatchError(
        f"The change set breaks a rule: {reason}.",
        code="PATCH_CHANGESET_INVALID",
        hint="Start a new job with narrower instructions; nothing was applied.",
    )


async def collect(wt: Path, baseline: str, limits: PatchLimits) -> Changeset:
    """Stage in the worktree's own index, then read the diff against the baseline."""
    await git_ok(wt, "add", "--all", code="PATCH_DIFF_FAILED")
    await _refuse_filled_submodules(wt)
    common = ("diff", "--cached", "--no-renames", "--no-ext-diff", "--no-textconv")
    raw = await git_ok(
        wt, *common, "--raw", "-z", "--abbrev=40", baseline, code="PATCH_DIFF_FAILED"
    )
    diff = await git_ok(wt, *common, "--full-index", baseline, code="PATCH_DIFF_FAILED")
    if len(diff.stdout) > limits.max_diff_bytes:
        raise invalid(f"the diff is larger than {limits.max_diff_bytes} bytes")
    cs = Changeset(diff.text)
    entries = _raw_entries(raw.text)
    if len(entries) > limits.max_files_changed:
        raise invalid(f"more than {limits.max_files_changed} files changed")
    for old_mode, new_mode, old_oid, status, rel in entries:
        await _judge_entry(wt, cs, (old_mode, new_mode, old_oid, status, rel), limits)
    for line in cs.diff.splitlines():
        if line.startswith(("GIT binary patch", "Binary files ")):
            raise invalid("a binary file changed")
        if line.startswith("+") and not line.startswith("+++"):
            cs.added += 1
        elif line.startswith("-") and not line.startswith("---"):
            cs.removed += 1
    return cs


def _raw_entries(out: str) -> list[tuple[str, str, str, str, str]]:
    fields = out.split("\0")
    entries = []
    for i in range(0, len(fields) - 1, 2):
        meta = fields[i].lstrip(":").split(" ")
        if len(meta) == 5:
            entries.append((meta[0], meta[1], meta[2], meta[4], fields[i + 1]))
    return entries


async def _judge_entry(
    wt: Path, cs: Changeset, entry: tuple[str, str, str, str, str], limits: PatchLimits
) -> None:
    old_mode, new_mode, old_oid, status, rel = entry
    try:
        normalize_rel(rel, limits.editable_lockfiles)
    except ToolError:
        raise invalid(f"{rel} is a protected or invalid path") from None
    if status not in ("A", "M", "D"):
        raise invalid(f"{rel} has change type {status}")
    if new_mode not in _ALLOWED_MODES or old_mode not in _ALLOWED_MODES:
        raise invalid(f"{rel} is a symlink or submodule")
    if status == "A":
        cs.baseline[rel] = None
    else:
        blob = await git_ok(wt, "cat-file", "blob", old_oid, code="PATCH_DIFF_FAILED")
        cs.baseline[rel] = sha256(blob.stdout)
    if status == "D":
        cs.result[rel], cs.deletes = None, True
    else:
        data = (wt / rel).read_bytes()
        if len(data) > limits.max_file_bytes or not is_text(data):
            raise invalid(f"{rel} is binary or larger than {limits.max_file_bytes} bytes")
        cs.result[rel] = file_hash(wt, rel)
    cs.manifests = cs.manifests or is_dependency_manifest(rel)
    cs.made_executable = cs.made_executable or (new_mode == "100755" and old_mode != "100755")


# -- writes the changeset cannot carry ----------------------------------------------------------
@dataclass(slots=True)
class CarriedPaths:
    """Per job, what its changeset can carry. While the agent works the worktree's index holds
    the baseline, so it is listed once (tracked files, submodules); an untracked path is put
    to ``git check-ignore`` once, and again after an edit of a ``.gitignore``."""

    worktree: Path
    tracked: frozenset[str]
    links: frozenset[str]  # submodules: paths the index records as another repository's commit
    _ignored: dict[str, bool] = field(default_factory=dict)

    @classmethod
    async def read(cls, worktree: Path) -> CarriedPaths:
        done = await git_ok(worktree, "ls-files", "--stage", "-z", code="PATCH_DIFF_FAILED")
        tracked, links = set(), set()
        for entry in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
            meta, _, rel = entry.partition("\t")
            if rel:
                tracked.add(rel)
            if meta.startswith("160000 "):
                links.add(rel)
        return cls(worktree, frozenset(tracked), frozenset(links))

    async def ignored(self, rels: list[str]) -> set[str]:
        """Which of ``rels`` ``git add`` would leave out as ignored (a tracked file never is)."""
        unknown = [r for r in rels if r not in self.tracked and r not in self._ignored]
        if unknown:
            found = await ignored_paths(self.worktree, unknown)
            self._ignored.update((r, r in found) for r in unknown)
        return {r for r in rels if self._ignored.get(r, False)}

    def ignore_rules_changed(self) -> None:
        self._ignored.clear()

    async def uncarried(self, rels: list[str]) -> ToolError | None:
        """Why the changeset could not carry a write of ``rels``; None when it can."""
        for rel in rels:
            repository = enclosing_repository(self.worktree, rel, self.links)
            if repository:
                return ToolError(
                    f"{rel} is inside the submodule or nested repository {repository}; this "
                    "job's change cannot carry it.",
                    code="PATCH_PATH_IN_SUBMODULE",
                    hint="Change files of this repository only.",
                )
        ignored = sorted(await self.ignored(rels))
        return _ignored_error(ignored) if ignored else None


async def refuse_uncarried_writes(
    session: PatchSession, paths: Iterable[str], carried: CarriedPaths | None = None
) -> None:
    """Before a write touches the worktree: each path it creates, changes or deletes must be
    one the changeset carries. One that is not ends the job now, with its code, instead of
    being written, reported as applied and then missing from the diff. ``carried``: the job's
    own (read once), else the worktree is listed for this call."""
    try:
        rels = [normalize_rel(raw, session.limits.editable_lockfiles) for raw in paths]
        known = carried if carried is not None else await CarriedPaths.read(session.worktree)
        problem = await known.uncarried(rels)
    except ToolError as err:
        problem = err
    except PatchError as err:  # git could not answer: nothing is written on a guess
        problem = ToolError(err.message, code=err.code, hint=err.hint)
    if problem is not None:
        raise _ends_job(session, problem)


async def ignored_before_write(session: PatchSession) -> set[str]:
    """What ``refuse_hidden_writes`` compares with, taken just before a write to a
    ``.gitignore``."""
    try:
        return await untracked_ignored(session.worktree)
    except PatchError as err:
        raise _ends_job(session, ToolError(err.message, code=err.code, hint=err.hint)) from None


async def refuse_hidden_writes(session: PatchSession, before: set[str]) -> None:
    """After a write to a ``.gitignore``: no file of the job may have become ignored (the
    untracked files ignored now are the ones ignored ``before``, no more)."""
    hidden = sorted(await ignored_before_write(session) - before)
    if hidden:
        raise _ends_job(session, _ignored_error(hidden))


def _ignored_error(rels: list[str]) -> ToolError:
    return ToolError(
        f"The repository ignores {', '.join(rels[:5])}: git would leave it out of the change.",
        code="PATCH_PATH_IGNORED",
        hint="Write only to paths the repository does not ignore (see .gitignore).",
    )


def _ends_job(session: PatchSession, err: ToolError) -> ToolError:
    session.end_job(err.code, err.message)
    return err


def enclosing_repository(wt: Path, rel: str, links: Collection[str]) -> str:
    """The folder above ``rel`` that is a submodule or holds its own ``.git``; "" if none."""
    parts = rel.split("/")
    for n in range(1, len(parts)):
        folder = "/".join(parts[:n])
        if folder in links or os.path.lexists(wt / folder / ".git"):
            return folder
    return ""


async def ignored_paths(wt: Path, rels: list[str]) -> set[str]:
    """Which of ``rels`` (not tracked) the repository's ignore rules exclude, as git add sees
    it; a path git cannot judge counts as ignored."""
    if not rels:
        return set()
    data = "\0".join(rels).encode("utf-8", "surrogateescape") + b"\0"
    done = await git(wt, "check-ignore", "-z", "--stdin", stdin=data)
    if done.returncode == 1:
        return set()
    if done.returncode != 0:
        return set(rels)
    return {p for p in done.stdout.decode("utf-8", "surrogateescape").split("\0") if p}


async def untracked_ignored(wt: Path) -> set[str]:
    done = await git_ok(
        wt,
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        code="PATCH_DIFF_FAILED",
    )
    return {p for p in done.stdout.decode("utf-8", "surrogateescape").split("\0") if p}


async def _refuse_filled_submodules(wt: Path) -> None:
    """A file in a submodule's (empty, not checked out) folder is one git add left out."""
    filled = _filled_submodule(wt, (await CarriedPaths.read(wt)).links)
    if filled:
        raise PatchError(
            f"Files were written inside the submodule {filled}; the change cannot carry them.",
            code="PATCH_PATH_IN_SUBMODULE",
            hint="Start a new job that changes files of this repository only.",
        )


def _filled_submodule(wt: Path, links: Collection[str]) -> str:
    for link in sorted(links):
        folder = wt / link
        if folder.is_dir() and not os.path.lexists(folder / ".git") and any(folder.iterdir()):
            return link
    return ""
