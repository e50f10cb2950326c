"""llama.cpp's OpenAI-compatible server for one GGUF file, as a child process of xclaw.

``LlamaServer.start()`` spawns ``_child`` (``xllamacpp``), which binds a free loopback port,
loads the model and reports its URL; load progress (llama.cpp's log stages) goes to a
``LoadReporter``. ``stop()`` closes the child's stdin, which ends it, and kills it if it does
not exit in time. The child also ends when xclaw dies (its stdin reaches end of file then), so
no server outlives the process that started it, whatever way that process ends.

``ServerPool`` shares one server between every model of a process that serves the same file
with the same settings (an eval's cases, a gateway's sessions): started on first use, stopped
``linger_s`` after its last user closed, and at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

import httpx

from xclaw.core.errors import ModelRequestRejected

__all__ = [
    "LlamaServer",
    "LoadReporter",
    "LocalServerError",
    "ServerPool",
    "ServerSettings",
    "default_pool",
]

_POLL_S = 0.1
_LOG_LINES = 40
# llama.cpp log fragments and the load stage each one starts.
_STAGES = (
    ("init: loading model", "loading the model file"),
    ("load_tensors", "loading tensors"),
    ("llama threadpool init", "setting up threads"),
    ("initializing, n_slots", "allocating the context"),
    ("warming up", "warming up"),
    ("model loaded", "model loaded"),
)


class LocalServerError(ModelRequestRejected):
    """The local server could not be started (a retry would fail the same way)."""

    code = "LOCAL_SERVER_FAILED"


class LoadReporter(Protocol):
    def update(self, stage: str, elapsed_s: float) -> None:
        """Called while loading, a few times a second."""

    def ready(self, url: str, elapsed_s: float) -> None: ...

    def failed(self) -> None: ...


def default_threads() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


@dataclass(frozen=True)
class ServerSettings:
    """How to serve one model; equal settings share a server in a ``ServerPool``."""

    model: Path
    n_ctx: int = 16384
    max_tokens: int = 2048  # per reply unless a request asks for fewer: a small model can loop
    threads: int = field(default_factory=default_threads)
    temperature: float = 0.0  # the server's default; a request's own temperature wins
    seed: int = 42

    def as_json(self) -> str:
        return json.dumps(
            {
                "model": str(self.model),
                "n_ctx": self.n_ctx,
                "max_tokens": self.max_tokens,
                "threads": self.threads,
                "temperature": self.temperature,
                "seed": self.seed,
            }
        )


class LlamaServer:
    """One llama.cpp server process; see the module docstring."""

    def __init__(
        self,
        settings: ServerSettings,
        *,
        reporter: LoadReporter | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.settings = settings
        self.reporter = reporter
        self.log_path = log_path
        self.base_url: str | None = None  # http://127.0.0.1:PORT once ready
        self._proc: subprocess.Popen[str] | None = None
        self._threads: list[threading.Thread] = []
        self._log: deque[str] = deque(maxlen=_LOG_LINES)
        self._stage = "starting"
        self._child_error: str | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    async def start(self, timeout_s: float = 600.0) -> str:
        """The server's base URL, once the model is loaded (spawned by the first caller;
        concurrent callers wait for the same server)."""
        if self.base_url is not None and self.running:
            return self.base_url
        if self._proc is not None and not self.running:  # it died since: start it anew
            self.stop()
        spawned = self._proc is None
        if spawned:
            self._spawn()
        started = time.monotonic()
        try:
            while self.base_url is None:
                self._raise_if_dead()
                elapsed = time.monotonic() - started
                if elapsed > timeout_s:
                    raise LocalServerError(
                        f"llama.cpp did not load {self.settings.model.name} in {timeout_s:g}s.",
                        code="LOCAL_SERVER_TIMEOUT",
                        hint="A larger model needs more time or memory; see " + self._log_hint(),
                    )
                if spawned and self.reporter is not None:
                    self.reporter.update(self._stage, elapsed)
                await asyncio.sleep(_POLL_S)
            if spawned:
                await self._check_health()
        except BaseException:
            if spawned and self.reporter is not None:
                self.reporter.failed()
            if spawned or not self.running:  # a waiter's own cancellation leaves it to others
                self.stop(grace_s=0)
            raise
        if spawned and self.reporter is not None:
            self.reporter.ready(self.base_url, time.monotonic() - started)
        return self.base_url

    def stop(self, grace_s: float = 10.0) -> None:
        """End the server (idempotent). A loaded server is asked to exit by closing its stdin;
        one still loading, or one that does not exit within ``grace_s``, is killed."""
        proc, self._proc, self.base_url = self._proc, None, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            try:
                proc.wait(timeout=grace_s if self._stage == "model loaded" else 0.5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for thread in self._threads:
            thread.join(timeout=2)
        self._threads = []
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _spawn(self) -> None:
        self._log.clear()
        self._stage, self._child_error = "starting", None
        log_file = self._open_log()
        self._proc = subprocess.Popen(  # noqa: S603 - our interpreter, our module
            [sys.executable, "-m", "xclaw.models.local._child", self.settings.as_json()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,  # Ctrl+C reaches xclaw, which stops the server in order
        )
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._threads = [
            threading.Thread(target=self._read_stdout, args=(self._proc.stdout,), daemon=True),
            threading.Thread(
                target=self._read_log, args=(self._proc.stderr, log_file), daemon=True
            ),
        ]
        for thread in self._threads:
            thread.start()

    def _open_log(self) -> IO[str] | None:
        if self.log_path is None:
            return None
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            return self.log_path.open("w", encoding="utf-8")
        except OSError:
            return None

    def _read_stdout(self, stream: IO[str]) -> None:
        for line in stream:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and isinstance(message.get("ready"), str):
                self._stage = "model loaded"
                self.base_url = message["ready"].rstrip("/")
            elif isinstance(message, dict) and "error" in message:
                self._child_error = str(message["error"])

    def _read_log(self, stream: IO[str], log_file: IO[str] | None) -> None:
        try:
            for line in stream:
                self._log.append(line.rstrip())
                if log_file is not None:
                    log_file.write(line)
                    log_file.flush()
                for fragment, stage in _STAGES:
                    if fragment in line:
                        self._stage = stage
        finally:
            if log_file is not None:
                log_file.close()

    def _raise_if_dead(self) -> None:
        proc = self._proc
        if proc is None:
            raise LocalServerError("The local server was stopped while it was starting.")
        if proc.poll() is None and self._child_error is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2)  # its last log lines arrive as it exits
        for thread in self._threads:
            thread.join(timeout=1)
        raise LocalServerError(
            f"llama.cpp could not serve {self.settings.model}: {self._failure_reason()}",
            hint="Check that the file is a complete GGUF model llama.cpp supports; see "
            + self._log_hint(),
        )

    def _failure_reason(self) -> str:
        errors = [ln for ln in self._log if " E " in ln or "error" in ln.lower()]
        chosen = errors[-3:] or list(self._log)[-3:] or [self._child_error or "it exited"]
        # "0.00.123.456 E srv  load_model: failed ..." -> "load_model: failed ..."
        return " | ".join(" ".join(ln.split()[3:]) if ln[:1].isdigit() else ln for ln in chosen)

    def _log_hint(self) -> str:
        return f"the server log in {self.log_path}." if self.log_path else "its log."

    async def _check_health(self) -> None:
        assert self.base_url is not None
        try:
            async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
                reply = await client.get(f"{self.base_url}/health")
        except httpx.HTTPError as err:
            raise LocalServerError(f"The local server does not answer: {err}.") from None
        if reply.status_code != 200:
            raise LocalServerError(
                f"The local server reports {reply.status_code} on /health: {reply.text[:200]}"
            )


@dataclass
class _Entry:
    server: LlamaServer
    refs: int = 0
    timer: threading.Timer | None = None


class ServerPool:
    """Servers shared by settings; see the module docstring."""

    def __init__(self, *, linger_s: float = 30.0, log_dir: Path | None = None) -> None:
        self.linger_s = linger_s
        self.log_dir = log_dir
        self._entries: dict[ServerSettings, _Entry] = {}
        self._lock = threading.Lock()

    async def acquire(
        self, settings: ServerSettings, reporter: LoadReporter | None = None
    ) -> LlamaServer:
        """A started server for ``settings``; give it back with ``release``."""
        with self._lock:
            entry = self._entries.get(settings)
            if entry is None:
                log = self.log_dir / f"llama-{settings.model.stem}.log" if self.log_dir else None
                entry = _Entry(LlamaServer(settings, reporter=reporter, log_path=log))
                self._entries[settings] = entry
            entry.refs += 1
            if entry.timer is not None:
                entry.timer.cancel()
                entry.timer = None
        try:
            await entry.server.start()
        except BaseException:
            self.release(entry.server)
            raise
        return entry.server

    def release(self, server: LlamaServer) -> None:
        with self._lock:
            entry = self._entries.get(server.settings)
            if entry is None or entry.server is not server:
                return
            entry.refs = max(0, entry.refs - 1)
            if entry.refs > 0:
                return
            if self.linger_s > 0 and server.running:
                entry.timer = threading.Timer(self.linger_s, self._expire, (server.settings,))
                entry.timer.daemon = True
                entry.timer.start()
                return
            del self._entries[server.settings]
        server.stop()

    def _expire(self, settings: ServerSettings) -> None:
        with self._lock:
            entry = self._entries.get(settings)
            if entry is None or entry.refs > 0:
                return
            del self._entries[settings]
        entry.server.stop()

    def running(self) -> list[LlamaServer]:
        with self._lock:
            return [e.server for e in self._entries.values() if e.server.running]

    def stop_all(self) -> None:
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            if entry.timer is not None:
                entry.timer.cancel()
            entry.server.stop()


_DEFAULT: ServerPool | None = None


def default_pool() -> ServerPool:
    """The process's pool, stopped at exit."""
    global _DEFAULT
    if _DEFAULT is None:
        from xclaw.dirs import cache_dir

        _DEFAULT = ServerPool(log_dir=cache_dir())
        atexit.register(_DEFAULT.stop_all)
    return _DEFAULT
