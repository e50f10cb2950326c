"""Throwaway Redis servers for tests: Debian's ``redis-server`` on a free loopback port, no
persistence, a temp dir; stopped at the end. Nothing is assumed to be running."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RedisServer:
    proc: subprocess.Popen[bytes]
    port: int
    base: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        shutil.rmtree(self.base, ignore_errors=True)


def start_redis() -> RedisServer:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is missing (apt-get install redis-server; make deps)")
    base = Path(tempfile.mkdtemp(prefix="xclaw-redis-"))
    port = _free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
    argv += ["no", "--dir", str(base), "--daemonize", "no", "--loglevel", "warning"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return RedisServer(proc, port, base)
        except OSError:
            time.sleep(0.05)
    proc.kill()
    shutil.rmtree(base, ignore_errors=True)
    raise RuntimeError("redis-server did not start")


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A fresh Redis for one test."""
    try:
        server = start_redis()
    except RuntimeError as err:
        pytest.fail(f"cannot start a throwaway Redis server: {err}")
    yield server
    server.stop()
