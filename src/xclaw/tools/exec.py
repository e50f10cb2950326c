"""``terminal.exec`` (seed 000 §7.3): run one program to completion — never through a shell.

The program gets its own session, stdout and stderr are captured apart and streamed live,
each stream is kept whole in a file and head+tail in memory, and on timeout or cancellation
the whole process tree is stopped (SIGTERM, a grace period, then SIGKILL; see
``xclaw.sandbox.proctree``).
The command helpers here (``prepare_command``, ``command_access``) are shared with
``process.start``.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from xclaw.core.errors import PolicyDenied, ToolArgumentsInvalid, ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Access, Command, OutputSink, Risk
from xclaw.sandbox import protect
from xclaw.sandbox.base import CommandRequest, Launch, RemoteSandbox, command_sandbox
from xclaw.sandbox.proctree import GRACE_S, TAG_VAR, ProcessTree, boot_ticks_floor, terminate_tree
from xclaw.tools.base import Tool, ToolContext, tool
from xclaw.tools.output import head_tail

MIN_TIMEOUT_MS = 100
MAX_TIMEOUT_MS = 3_600_000
OUTPUT_CAP_CHARS = 12_000
"""Characters of each stream returned to the model (head and tail); the file keeps it all."""
MAX_FILE_BYTES = 50_000_000
LIVE_CAP_CHARS = 2_000_000
"""Characters of each stream shown live; a runaway program must not flood the display."""
DRAIN_S = 2.0
"""After the program exits, how long leftover background processes may hold its pipes."""

_SETTLE_S = 5.0
_TEARDOWN_S = 1.0  # the kernel's kill of what is left in an ended sandbox
_DENIED_ENV_PREFIXES = ("LD_", "DYLD_")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True, slots=True)
class CommandLine:
    """A validated command and how its sandbox starts it: ``launch`` here, or ``remote``."""

    request: CommandRequest
    launch: Launch | None
    tag: str  # marks every descendant's environment, so the tree can be found later
    remote: RemoteSandbox | None = None  # the session's remote sandbox, which runs it

    @property
    def program(self) -> str:
        return self.request.program

    @property
    def argv(self) -> tuple[str, ...]:
        return self.request.argv

    @property
    def cwd(self) -> Path:
        return self.request.cwd

    @property
    def words(self) -> list[str]:
        return [self.program, *self.argv]

    def local(self) -> Launch:
        if self.launch is None:
            raise ToolError(
                "This command runs in the remote sandbox, which has no local process.",
                code="SANDBOX_UNSUPPORTED",
                hint="Use terminal.exec; long-running processes need the bwrap or host sandbox.",
            )
        return self.launch


def command_access(args: Any) -> Access:
    """What the policy judges for terminal.exec and process.start."""
    env = getattr(args, "env", None) or {}
    stdin = getattr(args, "stdin", None)
    if env:  # judged as `env K=V program argv` so the policy sees injected variables
        words = tuple(f"{k}={v}" for k, v in env.items())
        argv = (*words, args.program, *args.argv)
        return Access(command=Command("env", argv, args.cwd, stdin))
    return Access(command=Command(args.program, tuple(args.argv), args.cwd, stdin))


def prepare_command(
    ctx: ToolContext, program: str, argv: list[str], cwd: str, env: dict[str, str]
) -> CommandLine:
    """Validate a model's command; raises ``ToolError``/``PolicyDenied`` with a code."""
    if not program.strip() or "\0" in program:
        raise ToolArgumentsInvalid(
            "program must be a non-empty program name without NUL bytes.",
            hint="Pass the executable in program and its arguments in argv.",
        )
    if any("\0" in word for word in argv):
        raise ToolArgumentsInvalid("argv items must not contain NUL bytes.")
    check_env(env)
    where = ctx.resolve(cwd, must_exist=True)
    if not where.path.is_dir():
        raise ToolError(
            f"cwd {cwd!r} is not a directory.",
            code="PATH_NOT_DIRECTORY",
            hint="Give a directory inside the project as cwd.",
        )
    sandbox = command_sandbox(ctx.workspace.get_sandbox())
    remote = isinstance(sandbox, RemoteSandbox)  # runs on a copy: no local program to find
    executable = program if remote else find_program(program, where.path)
    granted = ctx.workspace.extra_roots() + ctx.once_roots
    request = CommandRequest(
        program, executable, tuple(argv), where.path, dict(env), ctx.root, granted
    )
    tag = secrets.token_hex(8)
    # The sandbox builds the environment from an allow-list: our credentials never pass.
    if isinstance(sandbox, RemoteSandbox):
        return CommandLine(request, None, tag, remote=sandbox)
    return CommandLine(request, sandbox.launch(request, tag=tag, network=ctx.network), tag)


def check_env(env: dict[str, str]) -> None:
    """Refuse malformed names and the variables that change how every program loads code."""
    for key, value in env.items():
        if not _ENV_NAME.match(key) or "\0" in value:
            raise ToolArgumentsInvalid(
                f"Environment variable {key!r} has an invalid name or value.",
                hint="Use names of letters, digits and underscores, and values without NUL.",
            )
        if key.upper().startswith(_DENIED_ENV_PREFIXES) or key == TAG_VAR:
            raise PolicyDenied(
                f"Setting {key} is not allowed: it would change how programs load code.",
                code="ENV_VAR_DENIED",
                hint="Remove it from env and run the command without it.",
            )


def find_program(program: str, cwd: Path) -> str:
    """Absolute path of ``program``: a path (relative to cwd) when it has '/', else on PATH."""
    if "/" in program:
        candidate = cwd / program  # an absolute program stays absolute
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
        if candidate.is_file():
            raise ToolError(
                f"{program} exists but is not executable.",
                code="COMMAND_NOT_EXECUTABLE",
                hint="Run it through its interpreter (program=python3, argv=[script]).",
            )
        raise ToolError(
            f"Command not found: {program} (looked in {cwd}).",
            code="COMMAND_NOT_FOUND",
            hint="Paths in program are relative to cwd; check the path.",
        )
    found = shutil.which(program, path=os.environ.get("PATH", os.defpath))
    if found is None:
        raise ToolError(
            f"Command not found: {program}.",
            code="COMMAND_NOT_FOUND",
            hint="Check the spelling or install it; project-local tools need a path "
            "such as ./node_modules/.bin/" + program.split("/")[-1] + ".",
        )
    return os.path.abspath(found)


class HeadTailBuffer:
    """The start and end of an unbounded text stream, in bounded memory.

    ``render`` returns exactly what ``head_tail(whole_text, cap)`` would, without the middle.
    """

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._head_n = cap * 2 // 3
        self._tail_n = cap - self._head_n
        self._whole: list[str] | None = []
        self._head = ""
        self._tail = ""
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        if self._whole is not None:
            self._whole.append(text)
            if self.total <= self._cap:
                return
            text, self._whole = "".join(self._whole), None
            self._head = text[: self._head_n]
        self._tail = (self._tail + text)[-self._tail_n :]

    def render(self) -> tuple[str, bool]:
        if self._whole is not None:
            return head_tail("".join(self._whole), self._cap)
        cut = self.total - self._head_n - self._tail_n
        return f"{self._head}\n…[{cut} characters truncated]…\n{self._tail}", True


class _Capture:
    """One output stream: streamed live, head+tail in memory, all of it (capped) to a file."""

    def __init__(self, name: str, emit: OutputSink, path: Path | None) -> None:
        self.name = name
        self.path = path
        self._emit = emit
        self._file: BinaryIO | None = _create_private(path) if path else None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._text = HeadTailBuffer(OUTPUT_CAP_CHARS)
        self._file_bytes = 0
        self._live_left = LIVE_CAP_CHARS

    def feed(self, data: bytes) -> None:
        self._write(data)
        self._add(self._decoder.decode(data))

    def finish(self) -> None:
        self._add(self._decoder.decode(b"", final=True))
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def render(self) -> tuple[str, bool]:
        return self._text.render()

    def _add(self, text: str) -> None:
        if not text:
            return
        self._text.add(text)
        if self._live_left > 0:
            self._emit(self.name, text[: self._live_left])
            self._live_left -= len(text)
            if self._live_left <= 0:
                self._emit(self.name, "\n…[live output paused; the result keeps head and tail]…\n")

    def _write(self, data: bytes) -> None:
        if self._file is None or self._file_bytes >= MAX_FILE_BYTES:
            return
        room = MAX_FILE_BYTES - self._file_bytes
        try:
            self._file.write(data[:room])
        except OSError:  # a full disk must not stop the command; the file just ends early
            self.close()
        self._file_bytes += min(len(data), room)


def _create_private(path: Path) -> BinaryIO:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    return os.fdopen(fd, "wb")


def output_paths(output_dir: Path | None, stem: str) -> tuple[Path | None, Path | None]:
    """Fresh ``<stem>.stdout``/``.stderr`` paths in ``output_dir`` (created 0o700), if any."""
    if output_dir is None:
        return None, None
    output_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    stem = _UNSAFE_NAME_CHARS.sub("_", stem)
    while (output_dir / f"{stem}.stdout").exists() or (output_dir / f"{stem}.stderr").exists():
        stem = f"{stem}-{secrets.token_hex(2)}"
    return output_dir / f"{stem}.stdout", output_dir / f"{stem}.stderr"


class _ExecProtocol(asyncio.SubprocessProtocol):
    """Feeds pipe data straight to the captures; futures mark exit and each pipe's end."""

    def __init__(self, captures: dict[int, _Capture], loop: asyncio.AbstractEventLoop) -> None:
        self._captures = captures
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: list[asyncio.Future[None]] = [loop.create_future() for _ in captures]
        self._closed_by_fd = dict(zip(captures, self.closed, strict=True))

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self._captures[fd].feed(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        fut = self._closed_by_fd.get(fd)
        if fut is not None and not fut.done():
            fut.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


@dataclass(frozen=True, slots=True)
class _Outcome:
    returncode: int | None
    timed_out: bool
    strays_stopped: bool
    duration_ms: int
    notes: tuple[str, ...] = ()


async def _run_command(
    cmd: CommandLine, out: _Capture, err: _Capture, *, timeout_s: float, stdin: str | None
) -> _Outcome:
    """Run ``cmd`` until it exits or times out.

    On timeout or cancellation the whole tree is stopped; after a normal exit only processes
    still holding the output pipes are (a daemon that let go of them is left alone).
    """
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    floor = boot_ticks_floor()
    launch = cmd.local()
    try:
        transport, proto = await loop.subprocess_exec(
            lambda: _ExecProtocol({1: out, 2: err}, loop),
            *launch.argv,
            **launch.spawn_options(),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
        launch.started(None)
        raise ToolError(
            f"{cmd.program} could not be started: {e.strerror or e}.",
            code="COMMAND_NOT_EXECUTABLE",
            hint="Check that it is a program for this system, or run it via its interpreter.",
        ) from None
    launch.started(transport.get_pid())
    tree = ProcessTree(transport.get_pid(), cmd.tag, floor, wrapper=launch.signals_as_exit_codes)
    try:
        if stdin is not None:
            _send_stdin(transport, stdin)
        timed_out, strays = await _wait_done(proto, timeout_s)
        if timed_out or strays:
            await terminate_tree(tree)
        elif launch.signals_as_exit_codes:
            await _sandbox_gone(tree)
        await _settle(proto)
    except asyncio.CancelledError:
        await _shielded(_stop(tree, proto))
        raise
    finally:
        transport.close()
    duration_ms = int((time.monotonic() - started) * 1000)
    code = launch.decode_returncode(transport.get_returncode())
    return _Outcome(code, timed_out, strays, duration_ms, _limit_notes(launch, code))


def _output_limit_notes(cmd: CommandLine, stderr: str) -> tuple[str, ...]:
    """Limits a program reported itself (it got EFBIG or ENOSPC instead of a signal)."""
    if cmd.launch is None or not cmd.launch.signals_as_exit_codes:
        return ()  # not in the bwrap sandbox: these are the host's own errors
    if "File too large" in stderr:
        return ("SANDBOX_FILE_SIZE_LIMIT: a file grew past the sandbox's file-size limit",)
    if "No space left on device" in stderr and _disk_has_room(cmd.request.root):
        return ("SANDBOX_SPACE_LIMIT: a private /tmp, /var/tmp or home folder is full",)
    return ()


def _disk_has_room(root: Path) -> bool:
    try:
        return shutil.disk_usage(root).free > 256 << 20
    except OSError:
        return False


def _first_note(notes: tuple[str, ...]) -> str:
    return next(n.split(": ", 1)[-1] for n in notes if n.startswith("SANDBOX_"))


def _limit_notes(launch: Launch, code: int | None) -> tuple[str, ...]:
    notes = launch.limit_notes()
    if code == -signal.SIGXFSZ:
        notes += ("SANDBOX_FILE_SIZE_LIMIT: a file grew past the sandbox's file-size limit",)
    return notes


def _send_stdin(transport: asyncio.SubprocessTransport, text: str) -> None:
    pipe = transport.get_pipe_transport(0)
    if isinstance(pipe, asyncio.WriteTransport):
        # Buffered by the transport; a child that never reads just leaves it unread.
        pipe.write(text.encode())
        pipe.write_eof()


async def _wait_done(proto: _ExecProtocol, timeout_s: float) -> tuple[bool, bool]:
    """(timed out, leftover processes held the pipes after the program exited)."""
    # Futures, not Process.wait(): that also waits for the pipes, which a background child
    # may hold open forever after the program itself has exited.
    done, _ = await asyncio.wait([proto.exited], timeout=timeout_s)
    if not done:
        return True, False
    _, pending = await asyncio.wait(proto.closed, timeout=DRAIN_S)
    return False, bool(pending)


async def _sandbox_gone(tree: ProcessTree) -> None:
    """The program's exit ends its sandbox's PID namespace and the kernel kills what is left
    (a daemon that let go of the pipes) a moment later: wait for that, and stop what still
    runs after it, so no process outlives the call."""
    deadline = time.monotonic() + _TEARDOWN_S
    while tree.collect():
        if time.monotonic() > deadline:
            await terminate_tree(tree)
            return
        await asyncio.sleep(0.01)


async def _settle(proto: _ExecProtocol) -> None:
    await asyncio.wait([proto.exited, *proto.closed], timeout=_SETTLE_S)


async def _stop(tree: ProcessTree, proto: _ExecProtocol) -> None:
    await terminate_tree(tree)
    await _settle(proto)


async def _shielded(cleanup: Coroutine[Any, Any, None]) -> None:
    """Run cleanup to the end even if the caller is cancelled again meanwhile."""
    task = asyncio.ensure_future(cleanup)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        pass  # the task keeps running; the caller re-raises its own cancellation


def signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _check_timeout(timeout_ms: int) -> None:
    if not MIN_TIMEOUT_MS <= timeout_ms <= MAX_TIMEOUT_MS:
        raise ToolArgumentsInvalid(
            f"timeout_ms must be between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS}, not {timeout_ms}.",
            hint="Use process.start for programs that run longer than an hour.",
        )


@tool(
    "terminal.exec",
    risk=Risk.EXECUTE,
    read_only=False,
    timeout_s=MAX_TIMEOUT_MS / 1000 + DRAIN_S + GRACE_S + 30,
    access=command_access,
)
async def terminal_exec(
    ctx: ToolContext,
    program: str,
    argv: list[str] = [],  # noqa: B006 - becomes a pydantic default, copied per call
    cwd: str = ".",
    timeout_ms: int = 120_000,
    env: dict[str, str] = {},  # noqa: B006 - same
    stdin: str | None = None,
) -> ToolResult:
    """Run a program with arguments (no shell) and wait for it to finish.

    Args:
        program: Program name looked up on PATH, or a path relative to cwd such as ./run.sh.
        argv: Arguments, one item each; no shell quoting, pipes or redirection.
        cwd: Working directory inside the project.
        timeout_ms: Stop the program and its children after this many milliseconds.
        env: Extra environment variables for the program.
        stdin: Text sent to the program's standard input.
    """
    _check_timeout(timeout_ms)
    cmd = prepare_command(ctx, program, argv, cwd, env)
    out_path, err_path = output_paths(ctx.workspace.output_dir, f"exec-{ctx.call_id or 'call'}")
    out = _Capture("stdout", ctx.output, out_path)
    err = _Capture("stderr", ctx.output, err_path)
    protect.baseline(ctx.root)
    try:
        if cmd.remote is not None:
            outcome = await _run_remote(ctx, cmd.remote, cmd, out, err, timeout_ms / 1000, stdin)
        else:
            outcome = await _run_command(cmd, out, err, timeout_s=timeout_ms / 1000, stdin=stdin)
    finally:
        out.finish()
        err.finish()
        moved = protect.guard(ctx.root)
    result = protected_failure(_exec_result(cmd, outcome, out, err, timeout_ms), moved)
    ctx.workspace.last_verification = {
        "command": cmd.words,
        "ok": result.ok,
        "exit_code": result.data["exit_code"],
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    return result


async def _run_remote(
    ctx: ToolContext,
    sandbox: RemoteSandbox,
    cmd: CommandLine,
    out: _Capture,
    err: _Capture,
    timeout_s: float,
    stdin: str | None,
) -> _Outcome:
    captures = {"stdout": out, "stderr": err}
    done = await sandbox.run(
        cmd.request,
        stdin=stdin,
        timeout_s=timeout_s,
        on_output=lambda stream, data: captures[stream].feed(data),
    )
    if done.notes:  # what the sync did (skipped, protected, deletions not applied)
        ctx.output("stderr", "".join(f"[sandbox] {note}\n" for note in done.notes))
    return _Outcome(done.returncode, done.timed_out, False, done.duration_ms, done.notes)


def protected_failure(result: ToolResult, moved: list[str]) -> ToolResult:
    """A command that created a protected file fails, saying where its version went."""
    if not moved:
        return result
    return ToolResult.failure(
        "PROTECTED_FILE_WRITTEN",
        "The command created files that configure git or xclaw; they were moved aside: "
        + "; ".join(moved)
        + ".",
        hint="Write such files with fs.write, which asks the user first.",
        data={**result.data, "protected_moved": moved},
    )


def _exec_result(
    cmd: CommandLine, outcome: _Outcome, out: _Capture, err: _Capture, timeout_ms: int
) -> ToolResult:
    stdout, stdout_cut = out.render()
    stderr, stderr_cut = err.render()
    code = outcome.returncode
    exit_code = code if code is not None and code >= 0 else None
    data: dict[str, Any] = {
        "command": cmd.words,
        "exit_code": exit_code,
        "signal": signal_name(code),
        "duration_ms": outcome.duration_ms,
        "timed_out": outcome.timed_out,
        "stdout": stdout,
        "stderr": stderr,
        "stdout_truncated": stdout_cut,
        "stderr_truncated": stderr_cut,
        "stdout_file": str(out.path) if out.path else None,
        "stderr_file": str(err.path) if err.path else None,
    }
    if outcome.strays_stopped:
        data["background_stopped"] = True
    if outcome.notes:
        data["sandbox_notes"] = list(outcome.notes)
    if outcome.timed_out:
        return ToolResult.failure(
            "COMMAND_TIMEOUT",
            f"Command timed out after {timeout_ms} ms; it and its child processes were stopped.",
            hint="Raise timeout_ms if it needs longer, or use process.start for servers.",
            data=data,
        )
    notes = outcome.notes + _output_limit_notes(cmd, stderr) if exit_code != 0 else ()
    limit = next((n.split(":")[0] for n in notes if n.startswith("SANDBOX_")), None)
    if limit is not None:
        data["sandbox_notes"] = list(dict.fromkeys([*data.get("sandbox_notes", []), *notes]))
        return ToolResult.failure(
            limit,
            f"Command failed at a sandbox limit: {_first_note(notes)}.",
            hint="Make the command use fewer processes or smaller files, or ask the user "
            "to raise the sandbox limits in their config.",
            data=data,
        )
    if exit_code != 0:
        how = (
            f"exited with code {exit_code}" if exit_code is not None else "was stopped by a signal"
        )
        if data["signal"]:
            how = f"was killed by {data['signal'] or 'an unknown signal'}"
        return ToolResult.failure(
            "COMMAND_FAILED",
            f"Command {how}.",
            hint="Read stderr (and stdout) to see why it failed, then fix and re-run.",
            data=data,
        )
    return ToolResult.success("Command exited with code 0.", **data)


def exec_tools() -> list[Tool]:
    return [terminal_exec]
