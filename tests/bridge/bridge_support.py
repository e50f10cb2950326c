"""What the bridge tests share: the app under a real uvicorn on a free loopback port, the CLI
bridge as a real process, and ``ChatPages``, a text transport holding several chats.

``ChatPages`` is the one test-only transport: ``ScriptedTransport`` (the package fake) keeps
no chats, and conversation identity is about which chat each message lands in. It answers in
the XML protocol through a function of (chat, message), and keeps every chat's messages.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai
from fastapi import FastAPI

from xclaw.bridge import create_app
from xclaw.bridge.server import bind, make_server
from xclaw.core.errors import ModelRequestRejected
from xclaw.core.model import Model

TOKEN = "bridge-test-token-0123456789abcdef"
# Made once: building a default SSL context costs ~0.1 s per client (plain-http loopback only).
SSL_CONTEXT = ssl.create_default_context()


@dataclass
class Bridge:
    url: str
    client: openai.AsyncOpenAI
    app: FastAPI

    def http(self, token: str | None = TOKEN) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=10, verify=SSL_CONTEXT)

    def client_with(self, key: str) -> openai.AsyncOpenAI:
        http = httpx.AsyncClient(verify=SSL_CONTEXT)
        return openai.AsyncOpenAI(base_url=self.url, api_key=key, max_retries=0, http_client=http)


@asynccontextmanager
async def serving(models: dict[str, Model], *, queue: int = 8) -> AsyncIterator[Bridge]:
    app = create_app(models, TOKEN, queue=queue)
    sock = bind("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    server = make_server(app, log_level="warning")
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(5):
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.005)
        http = httpx.AsyncClient(verify=SSL_CONTEXT, timeout=10)
        async with openai.AsyncOpenAI(
            base_url=url, api_key=TOKEN, max_retries=0, http_client=http
        ) as client:
            yield Bridge(url, client, app)
    finally:
        server.should_exit = True
        await task
        sock.close()


# -- a transport with several chats -------------------------------------------------------------

Answer = Callable[[str, str], str]  # (chat url, message) -> reply in the XML protocol


@dataclass
class ChatPages:
    """Chats at ``/c/N``: ``start_conversation`` opens a blank one (it gets its URL with the
    first reply, as the page does), ``open_conversation`` a known one."""

    answer: Answer
    chats: dict[str, list[str]] = field(default_factory=dict)  # url -> messages received
    sent: list[tuple[str, str]] = field(default_factory=list)  # (url, message) in order
    conversation_url: str | None = None
    gone: set[str] = field(default_factory=set)  # chats deleted on the far side
    opened: list[str] = field(default_factory=list)  # urls reopened

    async def start_conversation(self) -> None:
        self.conversation_url = None

    async def open_conversation(self, url: str) -> None:
        if url in self.gone or url not in self.chats:
            raise ModelRequestRejected(f"{url} is gone", code="WEB_CONVERSATION_NOT_FOUND")
        self.conversation_url = url
        self.opened.append(url)

    async def send(self, text: str) -> str:
        if self.conversation_url is None:
            self.conversation_url = f"http://chat.test/c/{len(self.chats) + 1}"
            self.chats[self.conversation_url] = []
        self.chats[self.conversation_url].append(text)
        self.sent.append((self.conversation_url, text))
        return self.answer(self.conversation_url, text)

    def chat_of(self, needle: str) -> list[str]:
        """The chats whose messages mention ``needle``."""
        return [url for url, texts in self.chats.items() if any(needle in t for t in texts)]


# -- the CLI bridge as a process ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class CliBridge:
    proc: subprocess.Popen[str]
    port: int
    token_file: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def token(self) -> str:
        return self.token_file.read_text().strip()

    def client(self, **kw: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url, api_key=self.token(), max_retries=0, **kw)

    def async_client(self, **kw: Any) -> openai.AsyncOpenAI:
        http = httpx.AsyncClient(verify=SSL_CONTEXT, timeout=120)
        return openai.AsyncOpenAI(
            base_url=self.url, api_key=self.token(), max_retries=0, http_client=http, **kw
        )

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.communicate(timeout=30)[0]


def start_cli_bridge(
    args: Sequence[str], tmp_path: Path, *, env: dict[str, str] | None = None
) -> CliBridge:
    """``xclaw bridge ARGS`` in a process of its own, on a free port, once it listens;
    ``env`` replaces the environment (default: this process's)."""
    port = free_port()
    token_file = tmp_path / "bridge-token"
    argv = [sys.executable, "-m", "xclaw", "bridge", *args]
    argv += ["--port", str(port), "--token-file", str(token_file)]
    environ = {**(os.environ if env is None else env), "COLUMNS": "200"}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environ
    )
    bridge = CliBridge(proc, port, token_file)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the bridge exited: {proc.communicate()[0]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                if token_file.exists():
                    return bridge
        except OSError:
            pass
        time.sleep(0.1)
    bridge.stop()
    raise AssertionError("the bridge did not start")


def browser_env(*, headless: bool) -> dict[str, str]:
    """The environment of a CLI bridge driving the fixture page in Chromium: quiet flags
    (no sandbox of its own, so root or not does not matter), no display."""
    from web_support import TEST_ARGS

    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("XCLAW_BROWSER_HEADLESS", None)
    env["XCLAW_BROWSER_ARGS"] = " ".join(TEST_ARGS)
    if headless:
        env["XCLAW_BROWSER_HEADLESS"] = "1"
    return env
