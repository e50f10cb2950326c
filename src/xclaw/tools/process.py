"""Long-running processes (seed 000 §7.4): dev servers that ``terminal.exec`` must not wait for.

A ``ProcessManager`` belongs to one run and sees only the processes it started. Each process
writes stdout and stderr straight into log files, and a watcher task tails them into bounded
buffers with a read cursor. Files rather than pipes so that a process the user chooses to keep
(``detach_all``) goes on running after xclaw exits instead of dying on a broken pipe.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from xclaw.core.errors import ToolArgumentsInvalid, ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk
from xclaw.sandbox import protect
from xclaw.sandbox.base import LocalSandbox
from xclaw.sandbox.proctree import ProcessTree, boot_ticks_floor, terminate_tree
from xclaw.tools.base import Tool, ToolContext, tool
from xclaw.tools.exec import CommandLine, command_access, output_paths, prepare_command, signal_name
from xclaw.tools.output import head_tail

Stream = Literal["stdout", "stderr"]
Status = Literal["running", "exited", "stopped", "detached"]
_Ids = list[str]  # aliases: inside ProcessManager the name ``list`` is its method
_Rows = list[dict[str, Any]]

KEEP_CHARS = 256_000
"""Characters of each stream kept in memory; the log file has everything."""
MAX_WAIT_FOR_URL_MS = 120_000
_POLL_S = 0.05
_READ_BUDGET = 1 << 20  # bytes per stream per poll, so one chatty process can't stall the loop
_LONGEST_LINE = 4096
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_URL = re.compile(r"https?://[^\s'\"<>`]+")
_TRAILING = ".,;:!?)]}'\""


def normalise_url(raw: str) -> str | None:
    """A dev-server URL as a model should use it; None unless it has a host and a port."""
    parts = urlsplit(raw.rstrip(_TRAILING))
    try:
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if port is None or not host:
        return None
    if host in ("0.0.0.0", "::"):  # listening everywhere; loopback is what answers here
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return urlunsplit((parts.scheme, f"{host}:{port}", parts.path, parts.query, ""))


def detect_urls(text: str) -> list[str]:
    """``http(s)://host:port/...`` URLs in ``text``, unique, in order of appearance."""
    found: list[str] = []
    for match in _URL.finditer(_ANSI.sub("", text)):  # servers colour the port
        url = normalise_url(match.group(0))
        if url and url not in found:
            found.append(url)
    return found


class _OutputLog:
    """One stream's log file, tailed: the last KEEP_CHARS in memory and a read cursor."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buf = ""
        self._start = 0  # absolute offset of _buf[0] in the stream
        self._cursor = 0
        self._line = ""  # an unfinished line, held back from URL detection

    def poll(self) -> str:
        """Read what was appended since the last poll; returns complete lines only."""
        if self._fd is None:
            return ""
        data = os.read(self._fd, _READ_BUDGET)
        text = self._decoder.decode(data)
        if not text:
            return ""
        self._buf += text
        if len(self._buf) > 2 * KEEP_CHARS:
            drop = len(self._buf) - KEEP_CHARS
            self._buf, self._start = self._buf[drop:], self._start + drop
        lines, _, self._line = (self._line + text).rpartition("\n")
        if len(self._line) > _LONGEST_LINE:
            lines, self._line = lines + self._line, ""
        return lines

    def close(self) -> str:
        """Final poll; returns whatever lines and partial line were left."""
        lines = self.poll()
        flushed = self._decoder.decode(b"", final=True)  # a cut multibyte sequence
        self._buf += flushed
        rest, self._line = self._line + flushed, ""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        return lines + "\n" + rest

    def take(self, max_chars: int) -> tuple[str, bool]:
        """Output since the last take (head+tail capped), and whether it was cut."""
        note = ""
        if self._cursor < self._start:
            note = f"…[{self._start - self._cursor} earlier characters only in {self.path}]…\n"
            self._cursor = self._start
        new = self._buf[self._cursor - self._start :]
        self._cursor = self._start + len(self._buf)
        text, cut = head_tail(new, max_chars)
        return note + text, cut or bool(note)


@dataclass(eq=False)
class ManagedProcess:
    process_id: str
    popen: subprocess.Popen[bytes]
    command: CommandLine
    tree: ProcessTree
    logs: dict[Stream, _OutputLog]
    started_at: float = field(default_factory=time.time)
    urls: list[str] = field(default_factory=list)
    published: dict[str, str] = field(default_factory=dict)  # sandbox URL -> host URL
    status: Status = "running"
    returncode: int | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    watcher: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def poll(self) -> None:
        """Tail the logs, look for URLs, and notice an exit (without reaping the leader)."""
        for log in self.logs.values():
            self._scan(log.poll())
        if self.status == "running":
            exited, code = _peek_exit(self.pid)
            if exited:
                self.status, self.returncode = (
                    "exited",
                    self.command.local().decode_returncode(code),
                )
                for log in self.logs.values():
                    self._scan(log.poll())
        if self.urls or self.status != "running":
            self.changed.set()

    def close(self) -> None:
        """Final read, release the log files and reap the leader if it has exited."""
        for log in self.logs.values():
            self._scan(log.close())
        code = self.popen.poll()
        if code is not None and self.returncode is None:
            self.returncode = self.command.local().decode_returncode(code)

    def describe(self) -> dict[str, Any]:
        return {
            "processId": self.process_id,
            "pid": self.pid,
            "status": self.status,
            "command": self.command.words,
            "cwd": str(self.command.cwd),
            "detectedUrls": [self.published.get(u, u) for u in self.urls],
            "exit_code": self.returncode if (self.returncode or 0) >= 0 else None,
            "signal": signal_name(self.returncode),
            "stdout_file": str(self.logs["stdout"].path),
            "stderr_file": str(self.logs["stderr"].path),
        }

    def _scan(self, text: str) -> None:
        for url in detect_urls(text) if "://" in text else ():
            if url not in self.urls:
                self.urls.append(url)


def _peek_exit(pid: int) -> tuple[bool, int | None]:
    """Has ``pid`` exited? Leaves it a zombie, so its pid (our group and session id) stays
    reserved until we reap it and can never name an unrelated process meanwhile."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True, None  # reaped elsewhere; the status is lost
    if info is None or info.si_pid == 0:
        return False, None
    if info.si_code == os.CLD_EXITED:
        return True, info.si_status
    return True, -info.si_status


_Managed = list[ManagedProcess]


class ProcessManager:
    """The processes one run started. Ids are ``proc_01``, ``proc_02``, …"""

    def __init__(self, output_dir: Path | None = None) -> None:
        self._output_dir = output_dir
        self._own_dir: Path | None = None
        self._procs: dict[str, ManagedProcess] = {}

    async def start(self, cmd: CommandLine) -> ManagedProcess:
        process_id = f"proc_{len(self._procs) + 1:02d}"
        out_path, err_path = output_paths(self._log_dir(), process_id)
        assert out_path is not None and err_path is not None
        floor = boot_ticks_floor()
        popen = _spawn(cmd, out_path, err_path)
        logs: dict[Stream, _OutputLog] = {
            "stdout": _OutputLog(out_path),
            "stderr": _OutputLog(err_path),
        }
        wrapper = cmd.local().signals_as_exit_codes
        tree = ProcessTree(popen.pid, cmd.tag, floor, wrapper=wrapper)
        mp = ManagedProcess(process_id, popen, cmd, tree, logs)
        self._procs[process_id] = mp
        mp.watcher = asyncio.create_task(_watch(mp), name=f"xclaw-watch-{process_id}")
        return mp

    def get(self, process_id: str) -> ManagedProcess:
        mp = self._procs.get(process_id)
        if mp is None:
            raise ToolError(
                f"No process {process_id!r} was started in this session.",
                code="PROCESS_NOT_FOUND",
                hint="Use process.list to see the processes this session started.",
            )
        return mp

    async def wait_ready(self, mp: ManagedProcess, timeout_s: float) -> None:
        """Wait until a URL shows up in the output or the process exits, at most ``timeout_s``."""
        if timeout_s > 0:
            try:
                async with asyncio.timeout(timeout_s):
                    await mp.changed.wait()
            except TimeoutError:
                pass
        mp.poll()

    def read(
        self, process_id: str, stream: Stream | None = None, max_chars: int = 8000
    ) -> dict[str, Any]:
        """Status plus the output each stream produced since the previous read."""
        mp = self.get(process_id)
        if mp.status in ("running", "exited"):
            mp.poll()
        data = mp.describe()
        for name in (stream,) if stream else ("stdout", "stderr"):
            data[name], data[f"{name}_truncated"] = mp.logs[name].take(max_chars)
        return data

    async def stop(self, process_id: str) -> ManagedProcess:
        """Stop the process and everything it started (SIGTERM, grace, SIGKILL)."""
        mp = self.get(process_id)
        if mp.status == "stopped":
            return mp
        await _cancel(mp.watcher)  # so the status below is decided here alone
        if mp.status == "running":
            mp.poll()
        ended_by_itself = mp.status == "exited"
        await terminate_tree(mp.tree)  # an exited leader may still have left children
        if not ended_by_itself:
            mp.status = "stopped"
        if mp.popen.poll() is None:  # a sandbox still tearing down: reap it, leave no zombie
            try:
                await asyncio.to_thread(mp.popen.wait, 5)
            except subprocess.TimeoutExpired:
                pass  # close() reads what it can; the tree was already signalled
        mp.close()
        return mp

    def list(self) -> _Rows:
        for mp in self._procs.values():
            if mp.status in ("running", "exited"):
                mp.poll()
        return [mp.describe() for mp in self._procs.values()]

    def managed(self) -> _Managed:
        return list(self._procs.values())

    def running(self) -> _Ids:
        return [pid for pid, mp in self._procs.items() if mp.status == "running"]

    async def stop_all(self) -> _Ids:
        """Stop every process still ours; returns the ids that were running."""
        ids = self.running()
        live = [p for p, mp in self._procs.items() if mp.status in ("running", "exited")]
        await asyncio.gather(*(self.stop(p) for p in live))
        if self._own_dir is not None and not any(
            mp.status == "detached" for mp in self._procs.values()
        ):
            shutil.rmtree(self._own_dir, ignore_errors=True)
            self._own_dir = None
        return ids

    def detach_all(self) -> _Ids:
        """Leave the running processes running (the user keeps them); stop watching them."""
        ids = self.running()
        for p in ids:
            mp = self._procs[p]
            mp.status = "detached"
            if mp.watcher is not None:
                mp.watcher.cancel()
            for log in mp.logs.values():
                log.close()
        return ids

    def _log_dir(self) -> Path:
        if self._output_dir is not None:
            return self._output_dir
        if self._own_dir is None:
            self._own_dir = Path(tempfile.mkdtemp(prefix="xclaw-processes-"))
        return self._own_dir


def _spawn(cmd: CommandLine, out_path: Path, err_path: Path) -> subprocess.Popen[bytes]:
    launch = cmd.local()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    out_fd = os.open(out_path, flags, 0o600)
    err_fd = os.open(err_path, flags, 0o600)
    try:
        proc = subprocess.Popen(
            launch.argv,
            **launch.spawn_options(),
            stdin=subprocess.DEVNULL,
            stdout=out_fd,
            stderr=err_fd,
            start_new_session=True,
        )
    except OSError as e:
        launch.started(None)
        raise ToolError(
            f"{cmd.program} could not be started: {e.strerror or e}.",
            code="COMMAND_NOT_EXECUTABLE",
            hint="Check that it is a program for this system, or run it via its interpreter.",
        ) from None
    finally:
        os.close(out_fd)
        os.close(err_fd)
    launch.started(proc.pid)
    return proc


async def _watch(mp: ManagedProcess) -> None:
    # Polled: output lands in files, and a file has no "new data" event the loop can await.
    while mp.status == "running":
        mp.poll()
        await asyncio.sleep(_POLL_S)
    if not mp.tree.collect():
        mp.close()  # nothing left to stop: reap the leader now and release the log files


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is not None and not task.done():
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass


async def _publish(ctx: ToolContext, pm: ProcessManager) -> None:
    """Make each detected URL reachable from the user's machine (a sandboxed server listens
    in the session's own network namespace) and report the address that answers there."""
    sandbox = ctx.workspace.get_sandbox()
    if not isinstance(sandbox, LocalSandbox):
        return  # background processes run only in a local sandbox (``CommandLine.local``)
    for mp in pm.managed():
        for url in mp.urls:
            if url not in mp.published and mp.status == "running":
                mp.published[url] = await sandbox.publish(url)


def _manager(ctx: ToolContext) -> ProcessManager:
    pm = ctx.workspace.processes
    if pm is None:
        pm = ctx.workspace.processes = ProcessManager(ctx.workspace.output_dir)
    if not isinstance(pm, ProcessManager):
        raise TypeError(f"workspace.processes is a {type(pm).__name__}, not a ProcessManager")
    return pm


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ToolArgumentsInvalid(f"{name} must be between {low} and {high}, not {value}.")


@tool(
    "process.start",
    risk=Risk.EXECUTE,
    read_only=False,
    timeout_s=MAX_WAIT_FOR_URL_MS / 1000 + 30,
    access=command_access,
)
async def process_start(
    ctx: ToolContext,
    program: str,
    argv: list[str] = [],  # noqa: B006 - becomes a pydantic default, copied per call
    cwd: str = ".",
    env: dict[str, str] = {},  # noqa: B006 - same
    wait_for_url_ms: int = 5000,
) -> ToolResult:
    """Start a long-running program such as a dev server and keep it running.

    Args:
        program: Program name looked up on PATH, or a path relative to cwd.
        argv: Arguments, one item each; no shell.
        cwd: Working directory inside the project.
        env: Extra environment variables for the program.
        wait_for_url_ms: How long to wait for a URL to appear in its output.
    """
    _check_range("wait_for_url_ms", wait_for_url_ms, 0, MAX_WAIT_FOR_URL_MS)
    cmd = prepare_command(ctx, program, argv, cwd, env)
    pm = _manager(ctx)
    protect.baseline(ctx.root)  # what it writes later is caught by the next check
    mp = await pm.start(cmd)
    await pm.wait_ready(mp, wait_for_url_ms / 1000)
    await _publish(ctx, pm)
    data = pm.read(mp.process_id)
    if mp.status == "exited":
        how = f"code {data['exit_code']}" if data["signal"] is None else data["signal"]
        return ToolResult.failure(
            "PROCESS_EXITED",
            f"{mp.process_id} ({program}) exited right away ({how}).",
            hint="Read stderr and stdout for the cause; use terminal.exec for programs "
            "that finish by themselves.",
            data=data,
        )
    seen = (
        f"; it serves {', '.join(data['detectedUrls'])}"
        if mp.urls
        else (f"; no URL appeared within {wait_for_url_ms} ms (use process.read to follow it)")
    )
    return ToolResult.success(f"Started {mp.process_id} (pid {mp.pid}){seen}.", **data)


@tool("process.read", risk=Risk.READ)
async def process_read(ctx: ToolContext, process_id: str, max_chars: int = 8000) -> ToolResult:
    """Read a started process's new output since the last read, and its status.

    Args:
        process_id: The id process.start returned, such as proc_01.
        max_chars: Most characters of each stream to return (head and tail are kept).
    """
    _check_range("max_chars", max_chars, 100, 100_000)
    pm = _manager(ctx)
    pm.get(process_id).poll()
    await _publish(ctx, pm)
    data = pm.read(process_id, max_chars=max_chars)
    return ToolResult.success(f"{process_id} is {data['status']}.", **data)


@tool("process.stop", risk=Risk.EXECUTE, read_only=False)
async def process_stop(ctx: ToolContext, process_id: str) -> ToolResult:
    """Stop a process started with process.start, with all of its child processes.

    Args:
        process_id: The id process.start returned, such as proc_01.
    """
    pm = _manager(ctx)
    mp = await pm.stop(process_id)
    data = pm.read(process_id)
    return ToolResult.success(f"{process_id} is {mp.status}.", **data)


@tool("process.list", risk=Risk.READ)
async def process_list(ctx: ToolContext) -> ToolResult:
    """List the processes started in this session, with status and detected URLs."""
    pm = _manager(ctx)
    pm.list()
    await _publish(ctx, pm)
    procs = pm.list()
    return ToolResult.success(f"{len(procs)} process(es).", processes=procs)


def process_tools() -> list[Tool]:
    return [process_start, process_read, process_stop, process_list]
