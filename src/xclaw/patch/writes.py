"""The two write tools: ``replace_text`` (one unique exact fragment) and ``apply_patch``.

A rejection that left the worktree's fingerprint unchanged is retryable (``PATCH_REJECTED``);
a denied path, an oversized input or a fingerprint that moved ends the job. Both keep a file's
line ends: in a file whose lines all end in CRLF, text or hunks given with LF ends match and
are written back with CRLF (``hunks.uniform_crlf``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path

from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk
from xclaw.patch.diffparse import FilePatch, parse_patch, rejected
from xclaw.patch.hunks import plan_patch, uniform_crlf, write_all
from xclaw.patch.paths import is_text, normalize_rel, path_denied, regular_file
from xclaw.patch.session import PatchSession
from xclaw.tools.atomic import atomic_write_bytes
from xclaw.tools.base import Tool, tool
from xclaw.worktree.gitio import git

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


def replace_once(original: bytes, old: str, new: str, rel: str) -> bytes | str:
    """``original`` with the one occurrence of ``old`` replaced by ``new``, or why not. In a
    file whose lines all end in CRLF both texts match with LF ends and the result keeps CRLF,
    since a model copies such text with either end."""
    text = original.decode("utf-8")
    crlf = uniform_crlf(original)
    if crlf:
        text, old, new = (t.replace("\r\n", "\n") for t in (text, old, new))
    count = text.count(old)
    if count != 1:
        return f"oldText occurs {count} times in {rel}; it must occur exactly once"
    if old == new:
        return "oldText and newText differ only in their line ends"
    updated = text.replace(old, new, 1)
    return (updated.replace("\n", "\r\n") if crlf else updated).encode("utf-8")


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
        updated = replace_once(original, oldText, newText, rel)
        if isinstance(updated, str):
            raise rejected(updated)
        _too_big(session, updated.decode("utf-8"))
        before = await session.fingerprint()
        if await asyncio.to_thread(target.read_bytes) != original:
            raise await _restore_or_end(session, before, f"{rel} changed since it was read")
        await asyncio.to_thread(atomic_write_bytes, target, updated)
        # In a file with CRLF ends a CR before LF is a line end, not trailing whitespace.
        rule = ("-c", "core.whitespace=cr-at-eol") if b"\r\n" in original else ()
        check = await git(session.worktree, *rule, "diff", "--check", "--", rel)
        if not check.ok:
            await asyncio.to_thread(atomic_write_bytes, target, original)
            raise await _restore_or_end(session, before, "the new text has whitespace errors")
        session.changed()
        return ToolResult.success(f"Replaced 1 occurrence in {rel}.", path=rel)

    return replace_text


def _clean_paths(session: PatchSession, fp: FilePatch) -> FilePatch:
    """The section with both paths normalized, or the uniform terminal denial."""
    try:
        editable = session.limits.editable_lockfiles
        old = None if fp.old_path is None else normalize_rel(fp.old_path, editable)
        new = None if fp.new_path is None else normalize_rel(fp.new_path, editable)
    except ToolError as err:
        raise _terminal(session, err) from None
    return dataclasses.replace(fp, old_path=old, new_path=new)


def _check_targets(session: PatchSession, files: list[FilePatch]) -> list[FilePatch]:
    """Every path must be allowed: what a section reads an existing regular file, what it
    creates (new, renamed or copied to) absent, or freed by the patch itself, in real folders."""
    clean = [_clean_paths(session, fp) for fp in files]
    freed = {fp.old_path for fp in clean if fp.kind in ("delete", "rename")}
    for fp in clean:
        if fp.old_path is not None:
            _writable(session, fp.old_path)
        if fp.kind in ("create", "rename", "copy"):
            assert fp.new_path is not None
            taken = os.path.lexists(session.worktree / fp.new_path) and fp.new_path not in freed
            if taken or _links_on_the_way(session.worktree, fp.new_path):
                raise _terminal(session, path_denied())
    return clean


def _links_on_the_way(root: Path, rel: str) -> bool:
    current = root
    for part in rel.split("/")[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            return True
    return False


def _apply_all(session: PatchSession, files: list[FilePatch]) -> str:
    """Plan every file in memory, then write them all; or the first reason one cannot apply."""
    changes = plan_patch(session.worktree, files)
    if isinstance(changes, str):
        return changes
    write_all(session.worktree, changes)
    return ""


def apply_patch_tool(session: PatchSession) -> Tool:
    @tool("apply_patch", risk=Risk.WRITE, read_only=False)
    async def apply_patch(patch: str) -> ToolResult:
        """Change files with one raw git diff, as `git diff` writes it: diff --git a/P b/P, then
        --- a/P, +++ b/P and @@ hunks; new, deleted, renamed and copied files and mode changes
        with git's own header lines. All of it applies or none of it does.

        Args:
            patch: the diff text itself: no code fences, no explanations.
        """
        _too_big(session, patch)
        files = _check_targets(session, parse_patch(patch))
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
        summary = ", ".join(f.describe() for f in files)
        return ToolResult.success(f"Applied: {summary}.", files=[f.path for f in files])

    return apply_patch
