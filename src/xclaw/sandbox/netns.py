"""One loopback-only network namespace per session, shared by all of its commands.

A dev server started with ``process.start`` and the ``curl`` a later ``terminal.exec`` runs
must meet on the same loopback, and the user must reach the server from their own browser,
while nothing inside can reach another machine. So the session owns one network namespace
(created by ``bwrap --unshare-net``, kept alive by ``_holder.py``); every sandboxed command
enters it with ``nsenter`` on an fd xclaw holds, and ``expose`` publishes a namespace port on
the host's loopback through the holder's Unix socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from xclaw.core.errors import ToolError

_HOLDER = Path(__file__).with_name("_holder.py")
_READY_TIMEOUT_S = 10.0
_DIR_PREFIX = "xclaw-net-"
_STARTING_S = 120.0  # a folder without a socket this young may be a holder starting up


class SessionNetwork:
    """The network namespace of one session; ``close`` ends it and every bridge."""

    def __init__(self, bwrap: str, *, run_as: tuple[int, int] | None = None) -> None:
        self._bwrap = bwrap
        self._run_as = run_as
        self._holder = _Holder()
        self._servers: dict[int, tuple[asyncio.Server, int]] = {}
        self._open: set[asyncio.StreamWriter] = set()
        # A forgotten session must not leave its holder running until xclaw exits.
        weakref.finalize(self, self._holder.stop)

    @property
    def socket_path(self) -> str:
        assert self._holder.dir is not None
        return os.path.join(self._holder.dir, "bridge.sock")

    def ensure(self) -> None:
        """Start the holder if it is not running (about 30 ms, once per session)."""
        h = self._holder
        if h.proc is not None and h.proc.poll() is None:
            return
        self.close_sync()
        _sweep_once()
        h.dir = tempfile.mkdtemp(prefix=_DIR_PREFIX)
        uid = gid = None
        if self._run_as is not None:  # the holder's namespaces must belong to that user
            uid, gid = self._run_as
            os.chown(h.dir, uid, gid)
        argv = [
            self._bwrap,
            "--unshare-net",
            "--dev-bind",
            "/",
            "/",
            "--die-with-parent",
            "--",
            _interpreter(self._run_as),
            "-I",
            "-c",
            _HOLDER.read_text(),  # as text: another user may not be able to read our files
            self.socket_path,
        ]
        h.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            user=uid,
            group=gid,
            extra_groups=None if uid is None else [],
        )
        pid = self._await_ready(h.proc)
        h.net_fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        if os.readlink(f"/proc/{pid}/ns/user") != os.readlink("/proc/self/ns/user"):
            # Unprivileged bwrap gave the namespace its own user namespace: enter that first.
            h.user_fd = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)

    def _await_ready(self, proc: subprocess.Popen[bytes]) -> int:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], _READY_TIMEOUT_S)
        line = proc.stdout.readline().decode(errors="replace") if ready else ""
        if not line.startswith("ready "):
            err = b""
            if proc.poll() is not None and proc.stderr is not None:
                err = proc.stderr.read()
            self.close_sync()
            raise ToolError(
                "The sandbox network could not be set up: "
                + (err.decode(errors="replace").strip() or "the holder did not start")
                + ".",
                code="SANDBOX_FAILED",
                hint="Run `xclaw doctor`; choose --sandbox host only if bubblewrap cannot work.",
            )
        return int(line.split()[1])

    def enter_prefix(self) -> tuple[list[str], tuple[int, ...]]:
        """``nsenter`` words that put a command into this namespace, and the fds it needs."""
        self.ensure()
        h = self._holder
        assert h.net_fd is not None
        nsenter = _nsenter()
        words = [nsenter, f"--net=/proc/self/fd/{h.net_fd}"]
        fds = [h.net_fd]
        if h.user_fd is not None:
            words[1:1] = [f"--user=/proc/self/fd/{h.user_fd}", "--preserve-credentials"]
            fds.append(h.user_fd)
        return [*words, "--"], tuple(fds)

    async def expose(self, port: int) -> int:
        """Publish namespace port ``port`` on the host's 127.0.0.1; returns the host port
        (the same number when it is free there)."""
        if port in self._servers:
            return self._servers[port][1]
        self.ensure()
        handler = self._handler(port)
        try:
            server = await asyncio.start_server(handler, "127.0.0.1", port)
        except OSError:  # taken on the host: any free port will do, the URL says which
            server = await asyncio.start_server(handler, "127.0.0.1", 0)
        host_port = int(server.sockets[0].getsockname()[1])
        self._servers[port] = (server, host_port)
        return host_port

    def _handler(self, port: int):  # type: ignore[no-untyped-def]
        path = self.socket_path

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._open.add(writer)
            try:
                await bridge(reader, writer)
            finally:
                self._open.discard(writer)
                writer.close()

        async def bridge(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                up_reader, up_writer = await asyncio.open_unix_connection(path)
                self._open.add(up_writer)
                up_writer.write(f"{port}\n".encode())
                await up_writer.drain()
                if await up_reader.readline() != b"K\n":
                    raise ConnectionError(f"nothing listens on port {port} in the sandbox")
            except (OSError, ConnectionError):
                writer.close()
                return
            try:
                await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
            finally:
                self._open.discard(up_writer)
                up_writer.close()

        return handle

    async def close(self) -> None:
        for writer in list(self._open):  # connections still bridged (a browser kept one open)
            writer.close()
        self._open.clear()
        for server, _ in self._servers.values():
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers.clear()
        self.close_sync()

    def close_sync(self) -> None:
        for server, _ in self._servers.values():
            server.close()
        self._servers.clear()
        self._holder.stop()


@dataclass(slots=True)
class _Holder:
    """The holder process and what xclaw keeps open of its namespace."""

    proc: subprocess.Popen[bytes] | None = None
    dir: str | None = None
    net_fd: int | None = None
    user_fd: int | None = None

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
            self.proc = None
        for fd in (self.net_fd, self.user_fd):
            if fd is not None:
                os.close(fd)
        self.net_fd = self.user_fd = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


@functools.cache
def _sweep_once() -> int:
    return sweep_stale_dirs()


def sweep_stale_dirs(parent: str | None = None) -> int:
    """Remove the socket folders of holders that are gone; returns how many.

    A holder dies with its xclaw by SIGKILL (bwrap's ``--die-with-parent``), so a killed
    xclaw leaves its folder behind. A folder is stale when nothing listens on its socket any
    more (whatever PID namespace the holder was in), or when it has no socket and is older
    than a holder takes to start. Only real folders (not links) of this user are touched;
    root's, of any user.
    """
    parent = parent or tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(parent) if n.startswith(_DIR_PREFIX)]
    except OSError:
        return 0
    euid, removed = os.geteuid(), 0
    for name in names:
        path = os.path.join(parent, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or (euid != 0 and st.st_uid != euid):
            continue
        if _listening(os.path.join(path, "bridge.sock"), st.st_mtime):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed += not os.path.lexists(path)
    return removed


def _listening(sock_path: str, folder_mtime: float) -> bool:
    """Someone may still use this folder: its socket answers, or it is too young to tell."""
    try:
        st = os.lstat(sock_path)
    except FileNotFoundError:
        return time.time() - folder_mtime < _STARTING_S
    except OSError:
        return True
    if not stat.S_ISSOCK(st.st_mode):
        return True  # not a holder's folder as we make them: not ours to judge
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(sock_path)
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError:
        return True
    finally:
        probe.close()
    return True


def _interpreter(run_as: tuple[int, int] | None) -> str:
    """Our own Python, or the system's when the holder runs as a user who may not reach ours
    (a venv under /root, say)."""
    system = "/usr/bin/python3"
    if run_as is not None and os.path.exists(system):
        return system
    return sys.executable


@functools.cache
def _nsenter() -> str:
    return shutil.which("nsenter") or "nsenter"


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, ConnectionError):
        pass
