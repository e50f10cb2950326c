"""Programs an isolated tree needs started: fixed argv, no shell, always through a sandbox
launcher (the patch face's git, health check and checks; the agents' isolated workspaces).

Git runs through the host launcher (like ``project.status``), the safe way of
``xclaw.gitsafe``, plus ``NEUTRAL_OPTIONS``: settings a repository's own ``.git/config`` could
give that change bytes or the diff xclaw stores (eol conversion, context lines, renames,
whitespace-tolerant apply). On the user's repository only read-only plumbing is ever asked
of it; a job's own repositories (``patch.worktree.private_repo``) also ignore the attributes
that convert content.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from xclaw import gitsafe
from xclaw.core.errors import XclawError
from xclaw.sandbox.base import CommandRequest, LocalSandbox
from xclaw.sandbox.host import HostSandbox

GIT_TIMEOUT_S = 60.0
OUTPUT_CAP = 64 * 1024 * 1024  # git diffs of a job; check output is capped far lower
GIT_ENV = dict(gitsafe.SAFE_ENV)  # kept for importers; ``git`` adds per-repository overrides
# Pinned after gitsafe's options: the bytes git reads and writes are the file's own, and a
# diff has git's default shape whatever a repository's .git/config says.
NEUTRAL_OPTIONS: tuple[str, ...] = tuple(
    arg
    for setting in (
        "core.autocrlf=false",
        "core.eol=lf",
        "core.safecrlf=false",
        "core.ignoreStat=false",
        "diff.context=3",
        "diff.interHunkContext=0",
        "diff.algorithm=myers",
        "diff.renames=false",
        "diff.suppressBlankEmpty=false",
        "diff.ignoreSubmodules=none",
        "status.renames=false",
        "apply.ignoreWhitespace=no",
        "apply.whitespace=nowarn",
    )
    for arg in ("-c", setting)
)


class PatchError(XclawError):
    """A patch job (or a git call of an isolated tree) failed or was refused; ``code`` says
    which rule. The patch face's error (``xclaw.patch.PatchError``), defined here since the
    git plumbing below the faces raises it with the caller's code."""

    code = "PATCH_FAILED"


@dataclass(frozen=True, slots=True)
class Completed:
    returncode: int | None  # None: killed at the timeout
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")


async def run_program(
    sandbox: LocalSandbox,
    executable: str,
    args: tuple[str, ...],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout_s: float = GIT_TIMEOUT_S,
    cap: int = OUTPUT_CAP,
) -> Completed:
    """Start one program through ``sandbox``; output past ``cap`` bytes is dropped."""
    name = Path(executable).name
    request = CommandRequest(name, executable, args, cwd, dict(env or {}), cwd)
    launch = sandbox.launch(request, tag=secrets.token_hex(8))
    proc = await asyncio.create_subprocess_exec(
        *launch.argv,
        executable=launch.executable,
        cwd=launch.cwd,
        env=launch.env,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        pass_fds=launch.pass_fds,
        user=launch.uid,
        group=launch.gid,
        extra_groups=launch.extra_groups,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return Completed(None, b"", b"timed out")
    return Completed(launch.decode_returncode(proc.returncode), out[:cap], err[:cap])


def git_executable() -> str:
    git = shutil.which("git")
    if git is None:
        raise PatchError(
            "git is not installed.", code="PATCH_GIT_MISSING", hint="Install git and retry."
        )
    return git


async def git(root: Path, *args: str, stdin: bytes | None = None) -> Completed:
    """``git <args>`` in ``root`` with fixed, lock-free settings and nothing the repository's
    configuration names run (``xclaw.gitsafe``); never through a shell."""
    executable, host = git_executable(), HostSandbox()
    listing = gitsafe.config_listing()
    listed = await run_program(host, executable, listing.argv, root, env=listing.env)
    call = gitsafe.invocation((*NEUTRAL_OPTIONS, *args), listed.stdout if listed.ok else b"")
    return await run_program(host, executable, call.argv, root, env=call.env, stdin=stdin)


async def git_ok(root: Path, *args: str, stdin: bytes | None = None, code: str) -> Completed:
    """Like ``git`` but a non-zero exit raises ``PatchError(code)``."""
    done = await git(root, *args, stdin=stdin)
    if not done.ok:
        raise PatchError(
            f"git {args[0]} failed: {done.stderr.decode('utf-8', 'replace').strip()[:300]}",
            code=code,
            hint="Check the repository state with `git status` and retry.",
        )
    return done
