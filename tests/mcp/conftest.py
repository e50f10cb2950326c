"""The demo MCP server (``demo_server.py``) as a user-configured server, over stdio or HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_support import DEMO, stdio_definition


@pytest.fixture
def calls(tmp_path: Path) -> Path:
    """The file the demo server's destructive tool appends to: absent means never called."""
    return tmp_path / "calls.log"


@pytest.fixture
def stdio_section(calls: Path) -> dict[str, Any]:
    return {"servers": {"demo": stdio_definition(calls, timeout=3)}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_url(calls: Path) -> Iterator[str]:
    """The demo server on a real loopback port, streamable HTTP."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(DEMO), "http", str(port)],
        env={"PATH": "/usr/bin:/bin", "DEMO_CALLS": str(calls)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the demo HTTP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
