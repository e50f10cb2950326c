"""project.status (seed 000 §7.2): root, git state, running processes, last verification."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
import secrets
import shutil
from pathlib import Path
from typing import Any

from xclaw import gitsafe
from xclaw.core.messages import ToolResult
from xclaw.core.sandbox import Sandbox
from xclaw.sandbox.base import CommandRequest, LocalSandbox
from xclaw.sandbox.host import HostSandbox
from xclaw.tools.base import Tool, ToolContext, Workspace, tool

GIT_TIMEOUT_S = 10.0
CHANGED_CAP = 200  # changed files listed; the count is always exact

_HEADER = re.compile(
    r"^## (?:No commits yet on |Initial commit on )?(?P<branch>.+?)"
    r"(?:\.\.\.(?P<upstream>\S+))?(?: \[(?P<track>[^\]]*)\])?$"
)


@tool("project.status", timeout_s=30.0)
async def project_status(ctx: ToolContext) -> ToolResult:
    """Summarise the project: root, git branch and changed files, running processes, the
    last verification, and the files changed in this run."""
    ws = ctx.workspace
    git = await git_status(ws.root, ws.get_sandbox())
    processes = await _processes(ws)
    parts = [f"Project at {ws.root}"]
    if git is None:
        parts.append("not a git repository")
    else:
        parts.append(f"git branch {git['branch'] or 'detached'}, {git['changed_count']} changed")
    parts.append(f"{len(processes)} managed processes")
    parts.append(f"{len(ws.changed_files)} files changed in this run")
    return ToolResult.success(
        "; ".join(parts) + ".",
        root=str(ws.root),
        git=git,
        processes=processes,
        last_verification=ws.last_verification,
        changed_files=list(ws.changed_files),
    )


async def _processes(ws: Workspace) -> list[dict[str, Any]]:
    manager = ws.processes
    if manager is None:
        return []
    listed = manager.list()
    if inspect.isawaitable(listed):
        listed = await listed
    return list(listed)


async def git_status(root: Path, sandbox: Sandbox | None = None) -> dict[str, Any] | None:
    """Branch and changed files of the repository holding ``root``; None when there is none.
    git runs through the session's sandbox launcher like every other program."""
    git = shutil.which("git")
    if git is None:
        return None
    if sandbox is None or not isinstance(sandbox, LocalSandbox):
        sandbox = HostSandbox()  # the remote sandbox works on a copy; git reads the original
    prefix = await _git(sandbox, git, root, "rev-parse", "--show-prefix")
    if prefix is None:
        return None  # not a repository (or git could not tell in time)
    out = await _git(sandbox, git, root, "status", "--porcelain=v1", "-b", "-z", "--", ".")
    if out is None:
        return None
    return parse_porcelain(out, prefix.strip())


async def _git(sandbox: LocalSandbox, git: str, root: Path, *args: str) -> str | None:
    # The repository's configuration is listed first: what it names is never run.
    listing = await _run(sandbox, git, root, gitsafe.config_listing())
    out = await _run(sandbox, git, root, gitsafe.invocation(args, listing or b""))
    return None if out is None else out.decode("utf-8", "replace")


async def _run(
    sandbox: LocalSandbox, git: str, root: Path, call: gitsafe.GitInvocation
) -> bytes | None:
    request = CommandRequest("git", git, call.argv, root, call.env, root)
    launch = sandbox.launch(request, tag=secrets.token_hex(8))
    proc = await asyncio.create_subprocess_exec(
        *launch.argv,
        executable=launch.executable,
        cwd=launch.cwd,
        env=launch.env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        pass_fds=launch.pass_fds,
        user=launch.uid,
        group=launch.gid,
        extra_groups=launch.extra_groups,
    )
    try:
        stdout, _ = await asyncio.wait_for(proc.communicate(), GIT_TIMEOUT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return None
    return stdout if proc.returncode == 0 else None


def parse_porcelain(out: str, prefix: str = "") -> dict[str, Any]:
    """Parse ``git status --porcelain=v1 -b -z``; paths become relative to the project root."""
    records = out.split("\0")
    info: dict[str, Any] = {"branch": None, "upstream": None, "ahead": 0, "behind": 0}
    changed: list[dict[str, str]] = []
    count = 0
    i = 0
    while i < len(records):
        record = records[i]
        i += 1
        if record.startswith("## "):
            info.update(_parse_header(record))
        elif len(record) > 3:
            status, path = record[:2], record[3:].removeprefix(prefix)
            entry = {"path": path or ".", "status": status}  # "": the whole project is new
            if "R" in status or "C" in status:  # -z puts the old name in the next record
                entry["from"] = records[i].removeprefix(prefix) if i < len(records) else ""
                i += 1
            count += 1
            if len(changed) < CHANGED_CAP:
                changed.append(entry)
    info.update(clean=count == 0, changed=changed, changed_count=count)
    info["truncated"] = count > len(changed)
    return info


def _parse_header(line: str) -> dict[str, Any]:
    m = _HEADER.match(line)
    if m is None:
        return {}
    branch: str | None = m.group("branch")
    if branch is not None and branch.startswith("HEAD (no branch)"):
        branch = None
    track = m.group("track") or ""
    ahead = re.search(r"ahead (\d+)", track)
    behind = re.search(r"behind (\d+)", track)
    return {
        "branch": branch,
        "upstream": m.group("upstream"),
        "ahead": int(ahead.group(1)) if ahead else 0,
        "behind": int(behind.group(1)) if behind else 0,
    }


def project_tools() -> list[Tool]:
    """The information tool of seed 000 §7.2: project.status."""
    return [project_status]
