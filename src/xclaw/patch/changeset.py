"""The job's changeset relative to its baseline, and the rules it must pass as a whole.

Any violation fails the whole job: a bad file is never dropped to apply the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xclaw.core.errors import ToolError
from xclaw.patch.gitio import PatchError, git_ok
from xclaw.patch.job import PatchLimits, sha256
from xclaw.patch.paths import is_dependency_manifest, is_text, normalize_rel
from xclaw.patch.worktree import file_hash

_ALLOWED_MODES = {"000000", "100644", "100755"}


@dataclass(slots=True)
class Changeset:
    diff: str
    baseline: dict[str, str | None] = field(default_factory=dict)
    result: dict[str, str | None] = field(default_factory=dict)
    deletes: bool = False
    manifests: bool = False
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
    if status == "M" and old_mode != new_mode or status == "A" and new_mode != "100644":
        raise invalid(f"{rel} changes its file mode")
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
