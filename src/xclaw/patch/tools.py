"""The six patch tools, bound to one job's session. Argument names follow seed 001 exactly.

Read tools are ``read_only`` (the dispatcher runs them concurrently) and cached per change
version; like ``list_files``, ``read_file`` never reads what the repository ignores. Any write
moves the version, a check's too (its writes are put back, see ``checks``). The write tools
are wrapped (``carried``): a path the changeset could not carry is refused before the body
runs. ``trusted-auto`` gets no ``run_check``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import fnmatch
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk
from xclaw.patch.changeset import (
    CarriedPaths,
    ignored_before_write,
    refuse_hidden_writes,
    refuse_uncarried_writes,
)
from xclaw.patch.checks import CheckResult
from xclaw.patch.checks import run_check as run_trusted_check
from xclaw.patch.diffparse import parse_patch
from xclaw.patch.paths import is_protected, is_text, normalize_rel, path_denied, regular_file
from xclaw.patch.session import PatchSession
from xclaw.patch.writes import apply_patch_tool, replace_text_tool
from xclaw.tools.base import Tool, tool
from xclaw.tools.registry import ToolRegistry
from xclaw.worktree.gitio import PatchError, git

READ_LINES = 400
LINE_CHARS = 400
Count = Annotated[int, Field(ge=1, le=1000)]
Text = Annotated[str, Field(min_length=1, max_length=1000)]


async def allowed_files(session: PatchSession) -> list[str]:
    """Tracked and new files of the worktree that a tool may read, POSIX and relative."""
    done = await git(
        session.worktree, "ls-files", "-z", "--cached", "--others", "--exclude-standard"
    )
    editable = session.limits.editable_lockfiles
    return sorted({p for p in done.text.split("\0") if p and not is_protected(p, editable)})


def read_text(session: PatchSession, rel: str) -> str:
    """A permitted text file's content, or the uniform ``TOOL_PATH_DENIED``."""
    target = regular_file(session.worktree, normalize_rel(rel, session.limits.editable_lockfiles))
    data = target.read_bytes()
    if len(data) > session.limits.max_file_bytes or not is_text(data):
        raise path_denied()
    return data.decode("utf-8")


def _matches(rel: str, pattern: str | None) -> bool:
    return (
        pattern is None
        or fnmatch.fnmatchcase(rel, pattern)
        or fnmatch.fnmatchcase(rel.split("/")[-1], pattern)
    )


def read_tools(session: PatchSession, known: CarriedPaths) -> list[Tool]:
    @tool("list_files", read_only=True)
    async def list_files(glob: Text, maxResults: Count) -> ToolResult:  # noqa: N803
        """List files of the project that may be read, matching a glob like src/**/*.py.

        Args:
            glob: fnmatch pattern on the relative path or the file name ("*" for all).
            maxResults: the most paths to return.
        """

        async def compute() -> ToolResult:
            paths = [p for p in await allowed_files(session) if _matches(p, glob)]
            shown = paths[:maxResults]
            return ToolResult.success(
                f"{len(paths)} files match.", paths=shown, truncated=len(paths) > len(shown)
            )

        return await session.cached({"t": "list", "g": glob, "n": maxResults}, compute)

    @tool("search_text", read_only=True)
    async def search_text(query: Text, maxResults: Count, glob: str | None = None) -> ToolResult:  # noqa: N803
        """Search readable files for an exact piece of text; returns path, line and the line.

        Args:
            query: the exact text to find.
            maxResults: the most hits to return.
            glob: optional fnmatch pattern limiting the files searched.
        """

        async def compute() -> ToolResult:
            files = [p for p in await allowed_files(session) if _matches(p, glob)]
            hits = await asyncio.to_thread(_search, session, files, query, maxResults)
            return ToolResult.success(f"{len(hits)} hits.", hits=hits)

        return await session.cached(
            {"t": "search", "q": query, "g": glob, "n": maxResults}, compute
        )

    @tool("read_file", read_only=True)
    async def read_file(
        path: Annotated[str, Field(min_length=1, max_length=1024)],
        startLine: Annotated[int, Field(ge=1)] = 1,  # noqa: N803
        endLine: Annotated[int | None, Field(ge=1)] = None,  # noqa: N803
    ) -> ToolResult:
        """Read lines of one text file (at most 400 per call; continue with startLine).

        Args:
            path: a relative path from list_files or search_text.
            startLine: first line, from 1.
            endLine: last line, inclusive.
        """

        async def compute() -> ToolResult:
            text = await asyncio.to_thread(read_text, session, path)
            rel = normalize_rel(path, session.limits.editable_lockfiles)
            if await known.ignored([rel]):
                raise path_denied()  # as in list_files: a check's caches are not the project
            lines = text.splitlines(keepends=True)
            end = min(endLine or len(lines), startLine + READ_LINES - 1, len(lines))
            return ToolResult.success(
                f"{path} lines {startLine}-{end} of {len(lines)}.",
                content="".join(lines[startLine - 1 : end]),
                startLine=startLine,
                endLine=end,
                totalLines=len(lines),
            )

        return await session.cached({"t": "read", "p": path, "s": startLine, "e": endLine}, compute)

    return [list_files, search_text, read_file]


def _search(
    session: PatchSession, files: list[str], query: str, limit: int
) -> list[dict[str, object]]:
    hits: list[dict[str, object]] = []
    for rel in files:
        try:
            text = read_text(session, rel)
        except ToolError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if query in line:
                hits.append({"path": rel, "line": n, "text": line[:LINE_CHARS]})
                if len(hits) >= limit:
                    return hits
    return hits


async def run_session_check(session: PatchSession, check_id: str) -> CheckResult:
    """The check's result on the current change version: reused when nothing was written
    since it ran, else run now. A check that wrote files moves the version (every cache goes)."""
    result = session.fresh_check(check_id)
    if result is not None:
        return result
    result = await run_trusted_check(
        check_id,
        session.checks[check_id],
        session.worktree,
        session.sandbox,
        version=session.version,
        timeout_s=session.limits.check_timeout_s,
        cap=session.limits.check_output_chars,
    )
    session.check_results[check_id] = result
    if result.wrote:
        session.changed()
    return result


def check_tool(session: PatchSession) -> Tool:
    @tool("run_check", risk=Risk.EXECUTE, read_only=False, timeout_s=3600.0)
    async def run_check(checkId: Annotated[str, Field(min_length=1, max_length=100)]) -> ToolResult:  # noqa: N803
        """Run one of the project's configured checks (lint, tests, build) on the changes.

        Args:
            checkId: the id of a configured check.
        """
        if checkId not in session.checks:
            raise ToolError(
                f"There is no check {checkId!r}.",
                code="PATCH_CHECK_UNKNOWN",
                hint="Use one of: " + (", ".join(session.checks) or "(none configured)"),
                retryable=True,
            )
        try:
            result = await run_session_check(session, checkId)
        except PatchError as err:
            if err.code == "PATCH_STATE_LOST":
                session.end_job(err.code, err.message)
            raise ToolError(err.message, code=err.code, hint=err.hint) from None
        return ToolResult(
            ok=result.ok,
            message=_check_message(checkId, result),
            data=result.to_dict(),
            error_code=_check_code(result),
        )

    return run_check


def _check_message(check_id: str, result: CheckResult) -> str:
    if not result.wrote:
        return f"check {check_id} {result.status}"
    wrote = ", ".join(result.wrote[:10])
    return f"check {check_id} wrote files, which were put back (not your change): {wrote}"


def _check_code(result: CheckResult) -> str | None:
    if result.wrote:
        return "PATCH_CHECK_WROTE_FILES"
    return None if result.ok else "PATCH_CHECK_FAILED"


def carried(
    known: CarriedPaths,
    session: PatchSession,
    write: Tool,
    paths_of: Callable[[dict[str, Any]], list[str]],
) -> Tool:
    """``write`` that first refuses paths the changeset could not carry, and after an edit of
    a ``.gitignore`` fails when a file of the job became ignored."""
    body = write.fn

    async def guarded(**kwargs: Any) -> ToolResult:
        paths = paths_of(kwargs)
        await refuse_uncarried_writes(session, paths, known)
        edits_ignores = any(p.rsplit("/", 1)[-1] == ".gitignore" for p in paths)
        before = await ignored_before_write(session) if edits_ignores else set()
        try:
            out = body(**kwargs)
            result = await out if inspect.isawaitable(out) else out
        finally:
            if edits_ignores:
                known.ignore_rules_changed()
        if edits_ignores:
            await refuse_hidden_writes(session, before)
        return result

    return dataclasses.replace(write, fn=guarded)


def _replaced_paths(args: dict[str, Any]) -> list[str]:
    return [str(args["path"])]


def _patched_paths(args: dict[str, Any]) -> list[str]:
    """Every path the diff creates, changes or deletes (a copy's source is only read); none
    when it does not parse (the tool rejects it itself)."""
    try:
        files = parse_patch(str(args["patch"]))
    except ToolError:
        return []
    paths = [fp.new_path for fp in files if fp.new_path is not None]
    paths += [fp.old_path for fp in files if fp.old_path and fp.kind in ("delete", "rename")]
    return paths


def patch_registry(
    session: PatchSession, known: CarriedPaths, *, with_checks: bool
) -> ToolRegistry:
    """The job's tools; ``known`` is what its changeset can carry (``CarriedPaths.read``)."""
    tools = [
        *read_tools(session, known),
        carried(known, session, replace_text_tool(session), _replaced_paths),
        carried(known, session, apply_patch_tool(session), _patched_paths),
    ]
    if with_checks:
        tools.append(check_tool(session))
    return ToolRegistry(tools)
