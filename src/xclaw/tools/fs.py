"""File tools (seed 000 §7.2, §11): list, read in pages, write and edit atomically.

Every path goes through ``ctx.resolve``, which refuses escapes from the root; the checked path
is then opened beneath the root's fd with no symlink followed (``_safe_open``), so a folder
swapped for a link after the check fails the call (PATH_CHANGED) instead of reaching outside.
A file with more than one hard link is refused (PATH_HARDLINK) unless a human approved that
exact file: another of its names may be outside the root. Reads record a stamp (mtime, size)
per file; ``fs.edit`` refuses a file this run never read or that changed since, so the model
never edits content it has not seen.
"""

from __future__ import annotations

import mimetypes
import os
import stat
from collections import deque
from typing import Annotated, Any, Literal

from pydantic import Field

from xclaw.core.errors import PolicyDenied, ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk
from xclaw.policy.paths import ResolvedPath
from xclaw.policy.protected import is_protected_rel
from xclaw.sandbox import protect
from xclaw.tools._pages import LINE_CAP, PAGE_CAP, read_page
from xclaw.tools._safe_open import open_beneath, open_in, parent_in, path_changed, refuse_hardlink
from xclaw.tools.atomic import atomic_write_at
from xclaw.tools.base import Tool, ToolContext, tool
from xclaw.tools.search import fs_search

__all__ = ["CONTENT_CAP", "LINE_CAP", "LIST_BUDGET", "PAGE_CAP", "SKIP_DIRS", "fs_tools"]

CONTENT_CAP = 5 * 1024 * 1024  # bytes fs.write accepts
LIST_BUDGET = 56_000  # characters of fs.list entries, kept under its output cap
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__"})

_NOFOLLOW_CLOEXEC = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_OPEN_READ = (
    os.O_RDONLY
    | _NOFOLLOW_CLOEXEC
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after resolve must not hang the read
)
_OPEN_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW_CLOEXEC  # for scandir
Entry = dict[str, Any]


@tool("fs.list", output_cap=64_000, path_args=("path",))
def fs_list(
    ctx: ToolContext,
    path: str = ".",
    depth: Annotated[int, Field(ge=1, le=10)] = 2,
    max_entries: Annotated[int, Field(ge=1, le=5000)] = 500,
) -> ToolResult:
    """List a directory's files and folders, a few levels deep.

    Args:
        path: Directory relative to the project root.
        depth: How many levels to descend (1 lists only the directory's own entries).
        max_entries: Stop after this many entries and report truncated.
    """
    target = ctx.resolve(path, must_exist=True)
    try:
        fd = open_in(ctx, target, _OPEN_DIR)
    except NotADirectoryError:
        raise ToolError(
            f"{path!r} is a file, not a directory.",
            code="PATH_NOT_DIRECTORY",
            hint="Use fs.read to read a file.",
        ) from None
    except OSError as err:
        raise _os_failure(err, path, "read") from None
    prefix = "" if target.rel == "." else target.rel + "/"
    try:
        entries, truncated = _walk(fd, prefix, depth, max_entries)
    finally:
        os.close(fd)
    entries.sort(key=lambda e: e["path"].split("/"))
    where = "the project root" if target.rel == "." else target.rel
    note = " (truncated: narrow the path or lower depth)" if truncated else ""
    return ToolResult(
        ok=True,
        message=f"{len(entries)} entries under {where}{note}.",
        data={"path": target.rel, "entries": entries, "truncated": truncated},
        truncated=truncated,
    )


def _walk(top: int, prefix: str, depth: int, max_entries: int) -> tuple[list[Entry], bool]:
    """Breadth first, so a truncated listing still shows every upper level. Folders are
    opened beneath ``top`` by their listed names, never through a link."""
    entries: list[Entry] = []
    used = 0
    queue: deque[tuple[str, str, int]] = deque([(".", prefix, 1)])
    while queue:
        sub, pre, level = queue.popleft()
        try:
            fd = open_beneath(top, sub, _OPEN_DIR)
        except (OSError, PolicyDenied):
            continue  # unreadable, or swapped for a link since: listed, just not descended
        try:
            with os.scandir(fd) as it:  # entries use the fd, so describe them while it is open
                for item in sorted(it, key=lambda e: e.name):
                    if len(entries) >= max_entries or used > LIST_BUDGET:
                        return entries, True
                    entry = _describe(item, pre + item.name, fd)
                    entries.append(entry)
                    used += len(entry["path"]) + len(entry.get("target", "")) + 40
                    if entry["type"] == "dir" and not entry.get("skipped") and level < depth:
                        queue.append((f"{sub}/{item.name}", entry["path"] + "/", level + 1))
        except OSError:
            continue
        finally:
            os.close(fd)
    return entries, False


def _describe(item: os.DirEntry[str], rel: str, dir_fd: int) -> Entry:
    if item.is_symlink():  # never followed: it may lead out of the root or into a loop
        try:
            return {"path": rel, "type": "symlink", "target": os.readlink(item.name, dir_fd=dir_fd)}
        except OSError:
            return {"path": rel, "type": "symlink"}
    if item.is_dir(follow_symlinks=False):
        if item.name in SKIP_DIRS:
            return {"path": rel, "type": "dir", "skipped": True}
        return {"path": rel, "type": "dir"}
    try:
        st = item.stat(follow_symlinks=False)
    except OSError:
        return {"path": rel, "type": "file"}
    kind = "file" if stat.S_ISREG(st.st_mode) else "other"
    if kind == "file" and st.st_nlink > 1:  # reading it needs the user's approval
        return {"path": rel, "type": kind, "size": st.st_size, "hard_links": st.st_nlink}
    return {"path": rel, "type": kind, "size": st.st_size}


@tool("fs.read", output_cap=80_000, path_args=("path",))
def fs_read(
    ctx: ToolContext,
    path: str,
    start_line: Annotated[int, Field(ge=1)] = 1,
    max_lines: Annotated[int, Field(ge=1, le=5000)] = 400,
) -> ToolResult:
    """Read a text file as numbered lines, one page at a time.

    Args:
        path: File relative to the project root.
        start_line: First line to return, counting from 1.
        max_lines: Most lines to return; use next_start_line from the result to continue.
    """
    target = ctx.resolve(path, must_exist=True)
    try:
        fd = open_in(ctx, target, _OPEN_READ)
        try:
            st = os.fstat(fd)
            _require_regular(st, path)
            refuse_hardlink(ctx, st, target.path, path)
            page = read_page(fd, st.st_size, start_line, max_lines)
        finally:
            os.close(fd)
    except OSError as err:
        raise _os_failure(err, path, "read") from None
    ctx.workspace.read_stamps[target.rel] = (st.st_mtime_ns, st.st_size)
    if isinstance(page, str):
        return _binary_result(target.rel, st.st_size, page)
    lines, total = page
    if start_line > max(total, 1):
        raise ToolError(
            f"{target.rel} has {total} lines; line {start_line} does not exist.",
            code="LINE_OUT_OF_RANGE",
            hint=f"Use a start_line between 1 and {max(total, 1)}.",
            retryable=True,
        )
    end = start_line + len(lines) - 1
    has_more = end < total
    shown = f"lines {start_line}-{end} of {total}" if lines else "an empty file"
    return ToolResult.success(
        f"Read {target.rel}: {shown}." + (f" Continue at line {end + 1}." if has_more else ""),
        path=target.rel,
        content="\n".join(lines),
        start_line=start_line,
        end_line=end,
        total_lines=total,
        has_more=has_more,
        next_start_line=end + 1 if has_more else None,
    )


def _binary_result(rel: str, size: int, digest: str) -> ToolResult:
    mime = mimetypes.guess_type(rel)[0] or "application/octet-stream"
    return ToolResult.success(
        f"{rel} is a binary file ({size} bytes, {mime}); its content is not shown.",
        path=rel,
        binary=True,
        size=size,
        mime_type=mime,
        sha256=digest,
    )


@tool("fs.write", risk=Risk.WRITE, path_args=("path",))
def fs_write(
    ctx: ToolContext,
    path: str,
    content: str,
    mode: Literal["create", "overwrite"] = "overwrite",
) -> ToolResult:
    """Create a file or replace its whole content. Missing parent folders are created.

    Args:
        path: File relative to the project root.
        content: The complete new content of the file.
        mode: "create" fails if the file exists; "overwrite" replaces it.
    """
    data = _encode(content)
    target = ctx.resolve(path, write=True)
    _refuse_symlink(ctx, path, target)
    try:
        dfd, name = parent_in(ctx, target, create=True)
    except OSError as err:
        raise _os_failure(err, path, "write") from None
    try:
        st = _existing(ctx, dfd, name, target, path)
        if st is not None and mode == "create":
            raise ToolError(
                f"{target.rel} already exists.",
                code="FILE_EXISTS",
                hint='Use mode "overwrite" to replace it, or fs.edit to change part of it.',
            )
        atomic_write_at(dfd, name, data)
        after = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError as err:
        raise _os_failure(err, path, "write") from None
    finally:
        os.close(dfd)
    ctx.workspace.read_stamps[target.rel] = (after.st_mtime_ns, after.st_size)
    ctx.workspace.note_change(target.rel)
    if is_protected_rel(target.rel):  # approved by a human: not an intrusion
        protect.accept_current(ctx.root)
    verb = "Created" if st is None else "Overwrote"
    return ToolResult.success(
        f"{verb} {target.rel} ({len(data)} bytes).",
        path=target.rel,
        bytes_written=len(data),
        created=st is None,
    )


def _existing(
    ctx: ToolContext, dfd: int, name: str, target: ResolvedPath, raw: str
) -> os.stat_result | None:
    """The entry a write replaces, seen in the pinned folder; None when there is none yet.

    The rename replaces the name and never writes into the old inode, so this stat racing a
    change cannot redirect the write; it only decides whether the write is allowed.
    """
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):  # no link was there when the path was checked
        raise path_changed(target.rel)
    _require_regular(st, raw)
    refuse_hardlink(ctx, st, target.path, raw)
    return st


def _encode(content: str) -> bytes:
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(
            "The content is not valid Unicode text (it has unpaired surrogates).",
            code="CONTENT_INVALID",
            hint="Send plain UTF-8 text.",
            retryable=True,
        ) from None
    if len(data) > CONTENT_CAP:
        raise ToolError(
            f"The content is {len(data)} bytes; the limit is {CONTENT_CAP}.",
            code="CONTENT_TOO_LARGE",
            hint="Write the file in smaller parts, or generate it with a command.",
        )
    return data


@tool("fs.edit", risk=Risk.WRITE, path_args=("path",))
def fs_edit(
    ctx: ToolContext,
    path: str,
    old_text: Annotated[str, Field(min_length=1)],
    new_text: str,
) -> ToolResult:
    """Replace one exact passage of a file you have read. old_text must occur exactly once.

    Args:
        path: File relative to the project root.
        old_text: The exact text to replace, including whitespace; add surrounding lines to
            make it unique.
        new_text: The text to put in its place.
    """
    target = ctx.resolve(path, write=True, must_exist=True)
    _refuse_symlink(ctx, path, target)
    try:
        dfd, name = parent_in(ctx, target)
    except OSError as err:
        raise _os_failure(err, path, "read") from None
    try:
        text = _load_for_edit(ctx, dfd, name, target, path)
        old, new = _match_line_endings(text, old_text, new_text)
        if old == new:
            raise ToolError(
                "old_text and new_text are the same; nothing would change.",
                code="EDIT_NO_CHANGE",
                hint="Send the text you want in new_text.",
                retryable=True,
            )
        pos = _find_once(text, old, target.rel)
        updated = text[:pos] + new + text[pos + len(old) :]
        try:
            atomic_write_at(dfd, name, updated.encode("utf-8"))
            after = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except (OSError, UnicodeEncodeError) as err:
            raise ToolError(f"Could not write {target.rel}: {err}.", code="WRITE_FAILED") from None
    finally:
        os.close(dfd)
    ctx.workspace.read_stamps[target.rel] = (after.st_mtime_ns, after.st_size)
    ctx.workspace.note_change(target.rel)
    first = text.count("\n", 0, pos) + 1
    last = first + new.count("\n", 0, len(new) - new.endswith("\n")) if new else first
    return ToolResult.success(
        f"Edited {target.rel}: lines {first}-{last} now hold the new text.",
        path=target.rel,
        start_line=first,
        end_line=last,
        snippet="\n".join(_snippet(updated, first, last)),
    )


def _load_for_edit(ctx: ToolContext, dfd: int, name: str, target: ResolvedPath, raw: str) -> str:
    rel = target.rel
    try:
        fd = open_beneath(dfd, name, _OPEN_READ)
        try:
            st = os.fstat(fd)
            _require_regular(st, raw)
            refuse_hardlink(ctx, st, target.path, raw)
            stamp = ctx.workspace.read_stamps.get(rel)
            if stamp is None:
                raise ToolError(
                    f"{rel} has not been read in this run.",
                    code="FILE_NOT_READ",
                    hint="Read it with fs.read first, then edit.",
                    retryable=True,
                )
            if stamp != (st.st_mtime_ns, st.st_size):
                raise ToolError(
                    f"{rel} changed since it was last read.",
                    code="FILE_CHANGED_SINCE_READ",
                    hint="Read the file again with fs.read, then retry the edit.",
                    retryable=True,
                )
            with open(fd, "rb", closefd=False) as f:
                data = f.read()
        finally:
            os.close(fd)
    except OSError as err:
        raise _os_failure(err, raw, "read") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(
            f"{rel} is not UTF-8 text; fs.edit only changes text files.",
            code="FILE_NOT_TEXT",
            hint="Use fs.write to replace it entirely, if that is intended.",
        ) from None


def _match_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """Models send \\n; a CRLF file should still match, and keep its CRLF endings."""
    if "\r\n" in text and "\n" in old and "\r\n" not in old and old not in text:
        return old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
    return old, new


def _find_once(text: str, old: str, rel: str) -> int:
    pos = text.find(old)
    if pos < 0:
        hint = "Read the file again with fs.read and copy old_text exactly."
        squeezed = " ".join(old.split())
        if squeezed and squeezed in " ".join(text.split()):
            hint = "It matches only if whitespace is ignored: copy the indentation exactly. " + hint
        raise ToolError(
            f"old_text was not found in {rel}.", code="EDIT_NO_MATCH", hint=hint, retryable=True
        )
    positions = [pos]
    while len(positions) < 50 and (nxt := text.find(old, positions[-1] + 1)) >= 0:
        positions.append(nxt)
    if len(positions) > 1:
        lines = [text.count("\n", 0, p) + 1 for p in positions]
        count = f"{len(positions)}{'+' if len(positions) == 50 else ''}"
        raise ToolError(
            f"old_text occurs {count} times in {rel} (lines {', '.join(map(str, lines[:20]))}).",
            code="EDIT_AMBIGUOUS",
            hint="Include more surrounding lines in old_text so it matches exactly once.",
            retryable=True,
            data={"count": len(positions), "lines": lines},
        )
    return pos


def _snippet(text: str, first: int, last: int, context: int = 2) -> list[str]:
    """The changed lines with a little context, numbered like fs.read, at most 40 lines."""
    lo = max(first - context, 1)
    hi = min(last + context, lo + 39)
    lines = text.split("\n")[lo - 1 : hi]
    return [f"{n:>6}\t{line.rstrip(chr(13))[:LINE_CAP]}" for n, line in enumerate(lines, lo)]


def _refuse_symlink(ctx: ToolContext, raw: str, target: ResolvedPath) -> None:
    """Writing through a link would change a file other than the one named."""
    lexical = os.path.normpath(os.path.join(ctx.root, raw))
    if os.path.islink(lexical):  # islink answers False on any OSError
        raise PolicyDenied(
            f"{raw!r} is a symbolic link; writing through links is refused.",
            code="PATH_IS_SYMLINK",
            hint=f"Write to the link's target instead: {target.path}.",
        )


def _require_regular(st: os.stat_result, raw: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(
            f"{raw!r} is a directory.",
            code="PATH_IS_DIRECTORY",
            hint="Use fs.list to see what it contains.",
        )
    if not stat.S_ISREG(st.st_mode):
        raise PolicyDenied(
            f"{raw!r} is not a regular file.", code="PATH_SPECIAL", hint="Use a regular file."
        )


def _os_failure(err: OSError, raw: str, verb: str) -> ToolError:
    if isinstance(err, NotADirectoryError | FileExistsError):
        return ToolError(
            f"Cannot {verb} {raw!r}: a part of the path is a file, not a folder.",
            code="PATH_NOT_DIRECTORY",
            hint="Check the path with fs.list.",
        )
    code = "WRITE_FAILED" if verb == "write" else "READ_FAILED"
    return ToolError(f"Cannot {verb} {raw!r}: {err.strerror or err}.", code=code)


def fs_tools() -> list[Tool]:
    """The file tools of seed 000 §7.2: fs.list, fs.read, fs.write, fs.edit, fs.search."""
    return [fs_list, fs_read, fs_write, fs_edit, fs_search]
