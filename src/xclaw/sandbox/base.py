"""What every sandbox offers the command tools, as data and two protocols over ``Sandbox``.

``xclaw.core.sandbox.Sandbox`` (a mode and a close) is what the layers that only hold a
sandbox see. A *local* sandbox (``bwrap``, ``host``) turns a validated command into a
``Launch``: the program xclaw actually starts (``bwrap ... -- prog argv`` or ``prog argv``
itself), its environment and working directory. The command tools keep doing the spawning,
output capture and tree killing, written once. A *remote* sandbox (``full``) runs the command
elsewhere and streams its output back; it implements ``RemoteSandbox``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from xclaw.core.errors import ToolError
from xclaw.core.sandbox import Sandbox
from xclaw.sandbox.limits import PidsGroup


@dataclass(frozen=True, slots=True)
class CommandRequest:
    """A command the policy allowed, before any sandbox wrapped it."""

    program: str  # as the model wrote it; argv[0]
    executable: str  # absolute path on this machine (local modes)
    argv: tuple[str, ...]
    cwd: Path  # inside the project root
    env: Mapping[str, str]  # the model's extra variables, already checked
    root: Path  # the project root (resolved)
    granted: tuple[Path, ...] = ()  # folders outside the root a human opened for the task


@dataclass(frozen=True, slots=True)
class Launch:
    """What to spawn for a command: ``argv[0]`` is shown, ``executable`` is run."""

    executable: str
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: Path
    pass_fds: tuple[int, ...] = ()
    # bwrap reports a child killed by signal N as exit status 128+N
    signals_as_exit_codes: bool = False
    run_as: tuple[int, int] | None = None  # (uid, gid) to start it as; None: our own
    close_after_start: tuple[int, ...] = ()  # fds only the child needs (a seccomp program)
    pids_group: PidsGroup | None = None  # root's per-command process limit

    def spawn_options(self) -> dict[str, Any]:
        """The ``subprocess``/``asyncio`` keyword arguments every spawn of this launch uses."""
        return {
            "executable": self.executable,
            "cwd": self.cwd,
            "env": self.env,
            "pass_fds": self.pass_fds,
            "user": self.uid,
            "group": self.gid,
            "extra_groups": self.extra_groups,
        }

    def started(self, pid: int | None) -> None:
        """Call right after the spawn (or its failure): our copies of the child's fds close."""
        for fd in self.close_after_start:
            with contextlib.suppress(OSError):
                os.close(fd)

    def limit_notes(self) -> tuple[str, ...]:
        """What a bound stopped, once the command has ended."""
        if self.pids_group is not None and self.pids_group.hit():
            return ("SANDBOX_PROCESS_LIMIT: a fork was refused at the process limit",)
        return ()

    @property
    def uid(self) -> int | None:
        return None if self.run_as is None else self.run_as[0]

    @property
    def gid(self) -> int | None:
        return None if self.run_as is None else self.run_as[1]

    @property
    def extra_groups(self) -> list[int] | None:
        """No supplementary groups when dropping privileges (a real drop, not just the uid)."""
        return None if self.run_as is None else []

    def decode_returncode(self, code: int | None) -> int | None:
        """Popen-style: negative for a signal, as if the program had been started directly."""
        if self.signals_as_exit_codes and code is not None and 128 < code < 128 + 65:
            return -(code - 128)
        return code


@runtime_checkable
class LocalSandbox(Sandbox, Protocol):
    """``bwrap`` and ``host``: xclaw starts the program this returns, on this machine."""

    def launch(self, request: CommandRequest, *, tag: str, network: bool = False) -> Launch:
        """The process to start for ``request``; ``tag`` goes into its environment.
        ``network``: a human approved the network beyond loopback for this command."""
        ...

    async def publish(self, url: str) -> str:
        """The host's address of a loopback ``url`` a program serves inside the sandbox."""
        ...


@dataclass(frozen=True, slots=True)
class RemoteOutcome:
    returncode: int | None  # None when it was stopped (timeout, cancel)
    timed_out: bool
    duration_ms: int
    notes: tuple[str, ...] = ()  # what syncing skipped, refused or copied back


OutputCallback = Callable[[Literal["stdout", "stderr"], bytes], None]


@runtime_checkable
class RemoteSandbox(Sandbox, Protocol):
    """``full``: the command runs elsewhere, on a copy of the project."""

    async def run(
        self,
        request: CommandRequest,
        *,
        stdin: str | None,
        timeout_s: float,
        on_output: OutputCallback,
    ) -> RemoteOutcome:
        """Run to completion (or timeout) in the remote sandbox, streaming output."""
        ...


def command_sandbox(sandbox: Sandbox) -> LocalSandbox | RemoteSandbox:
    """``sandbox`` as the command tools use it: a local launcher or a remote runner."""
    if isinstance(sandbox, LocalSandbox | RemoteSandbox):
        return sandbox
    raise ToolError(
        f"The {sandbox.mode} sandbox {type(sandbox).__name__} can neither launch nor run a "
        "command.",
        code="SANDBOX_UNSUPPORTED",
        hint="Give the agent a sandbox of xclaw.sandbox (make_sandbox), or none.",
    )
