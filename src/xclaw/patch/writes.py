"""The two write tools: ``replace_text`` (one unique exact fragment) and ``apply_patch``.

A rejection that left the worktree's fingerprint unchanged is retryable (``PATCH_REJECTED``);
a denied path, an oversized input or a fingerprint that moved ends the job.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk
from xclaw.patch.diffparse import FilePatch, parse_patch, rejected
from xclaw.patch.gitio import git
from xclaw.patch.hunks import FileChange, plan_change, write_all
from xclaw.patch.paths import is_text, normalize_rel, path_denied, regular_file
from xclaw.patch.session import PatchSession
from xclaw.tools.atomic import atomic_write_bytes
from xclaw.tools.base import Tool, tool

INLINE_PATCH_CHARS = 256 * 1024  # larger patches are applied off the event loop


def _terminal(session: PatchSession, err: ToolError) -> ToolError:
    session.end_job(err.code, err.message)
    return err


def _too_big(session: PatchSession, *texts: str) -> None:
    if sum(len(t.encode()) for t in texts) > session.limits.max_tool_input_bytes:
        raise _terminal(
            session,
            ToolError("The input is larger than the job allows.", code="PATCH_INPUT_TOO_LARGE"),
        )


def _writable(session: PatchSession, raw: str) -> tuple[str, Path]:
    try:
        rel = normalize_rel(raw, session.limits.editable_lockfiles)
        return rel, regular_file(session.worktree, rel)
    except ToolError as err:
        raise _terminal(session, err) from None


async def _restore_or_end(session: PatchSession, before: str, reason: str) -> ToolError:
    """After a refused write: retryable only when the worktree is exactly as it was."""
    if await session.fingerprint() == before:
        return rejected(reason)
    return _terminal(
        session, ToolError("The worktree changed during a refused write.", code="PATCH_STATE_LOST")
    )


def replace_text_tool(session: PatchSession) -> Tool:
    @tool("replace_text", risk=Risk.WRITE, read_only=False)
    async def replace_text(path: str, oldText: str, newText: str) -> ToolResult:  # noqa: N803
        """Replace one unique, exact piece of text in an existing file (copy it from the latest
        read_file or search_text result).

        Args:
            path: a relative path of an existing text file.
            oldText: the exact text to replace; it must occur exactly once.
            newText: the text to put in its place.
        """
        _too_big(session, path, oldText, newText)
        rel, target = _writable(session, path)
        if not oldText or oldText == newText:
            raise rejected("oldText must be non-empty and differ from newText")
        original = await asyncio.to_thread(target.read_bytes)
        if not is_text(original) or len(original) > session.limits.max_file_bytes:
            raise _terminal(session, path_denied())
        text = original.decode("utf-8")
        count = text.count(oldText)
        if count != 1:
            raise rejected(f"oldText occurs {count} times in {rel}; it must occur exactly once")
        updated = text.replace(oldText, newText, 1).encode("utf-8")
        _too_big(session, updated.decode("utf-8"))
        before = await session.fingerprint()
        if await asyncio.to_thread(target.read_bytes) != original:
            raise await _restore_or_end(session, before, f"{rel} changed since it was read")
        await asyncio.to_thread(atomic_write_bytes, target, updated)
        check = await git(session.worktree, "diff", "--check", "--", rel)
        if not check.ok:
            await asyncio.to_thread(atomic_write_bytes, target, original)
            raise await _restore_or_end(session, before, "the new text has whitespace errors")
        session.changed()
        return ToolResult.success(f"Replaced 1 occurrence in {rel}.", path=rel)

    return replace_text


def _check_targets(session: PatchSession, files: list[FilePatch]) -> None:
    """Every path must be allowed: an existing regular file, or a new one in real folders."""
    for fp in files:
        try:
            rel = normalize_rel(fp.path, session.limits.editable_lockfiles)
        except ToolError as err:
            raise _terminal(session, err) from None
        if fp.kind != "create":
            _writable(session, rel)
            continue
        if os.path.lexists(session.worktree / rel) or _links_on_the_way(session.worktree, rel):
            raise _terminal(session, path_denied())


def _links_on_the_way(root: Path, rel: str) -> bool:
    current = root
    for part in rel.split("/")[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            return True
    return False


def _apply_all(session: PatchSession, files: list[FilePatch]) -> str:
    """Plan every file in memory, then write them all; or the first reason one cannot apply."""
    changes: list[FileChange] = []
    for fp in files:
        rel = normalize_rel(fp.path, session.limits.editable_lockfiles)
        change = plan_change(fp, rel, session.worktree / rel)
        if isinstance(change, str):
            return change
        changes.append(change)
    write_all(session.worktree, changes)
    return ""


def apply_patch_tool(session: PatchSession) -> Tool:
    @tool("apply_patch", risk=Risk.WRITE, read_only=False)
    async def apply_patch(patch: str) -> ToolResult:
        """Create, update or delete files with one raw canonical unified git diff (diff --git
        a/P b/P, --- a/P, +++ b/P, @@ hunks). All of it applies or none of it does.

        Args:
            patch: the diff text itself: no code fences, no explanations.
        """
        _too_big(session, patch)
        files = parse_patch(patch)
        _check_targets(session, files)
        try:
            if len(patch) <= INLINE_PATCH_CHARS:  # a thread hand-off costs more than this work
                refusal = _apply_all(session, files)
            else:
                refusal = await asyncio.to_thread(_apply_all, session, files)
        except OSError as err:  # what was written is put back; a disk fault ends the job
            raise _terminal(
                session,
                ToolError(
                    f"The patch could not be written: {err.strerror}.", code="PATCH_WRITE_FAILED"
                ),
            ) from None
        if refusal:  # nothing was written: the worktree is exactly as it was
            raise rejected(refusal)
        session.changed()
        summary = ", ".join(f"{f.kind} {f.path}" for f in files)
        return ToolResult.success(f"Applied: {summary}.", files=[f.path for f in files])

    return apply_patch
