"""One MCP server for one run: started on first use, closed when the run ends.

The SDK's client is built on anyio task groups and cancel scopes, which must be entered and
left by the same task; tool calls run in the loop's tasks. So each server gets an owner task
that opens the client, waits for ``close()``, then shuts it down (stdio: the process tree is
stopped). Calls from any task go through the open client.
"""

from __future__ import annotations

import asyncio
import os
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from xclaw.core.errors import ToolError
from xclaw.dirs import data_dir
from xclaw.mcp.settings import HttpServer, ServerEntry, StdioServer, expand
from xclaw.redact import redact
from xclaw.sandbox.env import child_environment

_PAGES = 20  # list pagination bound: a server that never stops paging must not hang a run


class McpUnavailable(ToolError):
    code = "MCP_SERVER_UNAVAILABLE"


class McpConnection:
    """A lazily started connection to one configured server."""

    def __init__(self, entry: ServerEntry, root: Path) -> None:
        if entry.config is None:
            raise ValueError(f"MCP server {entry.name!r} has no valid definition")
        self.entry = entry
        self.config: StdioServer | HttpServer = entry.config
        self.root = root
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        self._failure: str | None = None

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def log_path(self) -> Path:
        path = data_dir() / "mcp-logs"
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path / f"{self.name}.log"

    async def client(self) -> Client:
        """The open client, starting the server on first use; ``McpUnavailable`` otherwise."""
        async with self._lock:
            if self._client is None and self._failure is None:
                await self._start()
            if self._client is None or self._failure is not None:
                raise self.unavailable(self._failure or "it is not running")
            return self._client

    async def _start(self) -> None:
        self._owner = asyncio.create_task(self._own(), name=f"mcp:{self.name}")
        try:
            async with asyncio.timeout(self.config.startup_timeout_s):
                await self._ready.wait()
        except TimeoutError:
            self._failure = f"it did not answer within {self.config.startup_timeout_s:g}s"
            await self.close()

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                client = Client(await self._transport(stack), cache=None, client_info=_CLIENT_INFO)
                self._client = await stack.enter_async_context(client)
                self._ready.set()
                await self._stop.wait()
        except Exception as err:  # noqa: BLE001 - any start or transport failure is reported
            self._failure = describe_error(err)
        finally:
            self._client = None
            if self._failure is None and not self._stop.is_set():
                self._failure = "the connection ended"
            self._ready.set()

    async def _transport(self, stack: AsyncExitStack) -> Any:
        cfg = self.config
        if isinstance(cfg, HttpServer):
            import httpx2

            headers = {k: expand(v) for k, v in cfg.headers.items()}
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
            )
            return streamable_http_client(expand(cfg.url), http_client=http)
        return stdio_client(self._stdio_parameters(cfg), errlog=self._errlog(stack))

    def _stdio_parameters(self, cfg: StdioServer) -> StdioServerParameters:
        # Only allow-listed names of our environment, then what the definition lists itself.
        listed = {k: expand(v) for k, v in cfg.env.items()}
        cwd = self.root if cfg.cwd is None else self.root / os.path.expanduser(expand(cfg.cwd))
        return StdioServerParameters(
            command=expand(cfg.command),
            args=[expand(a) for a in cfg.args],
            env=child_environment(listed),
            cwd=str(cwd),
        )

    def _errlog(self, stack: AsyncExitStack) -> TextIO:
        log = stack.enter_context(self.log_path.open("a", encoding="utf-8"))
        os.chmod(self.log_path, 0o600)
        return log

    async def close(self) -> None:
        """Stop the server (idempotent); waits for the owner task to finish."""
        self._stop.set()
        owner, self._owner = self._owner, None
        if owner is None:
            return
        if not self._ready.is_set():  # still in the handshake: nothing to wind down politely
            owner.cancel()
        # ``wait`` never raises the owner's outcome; the SDK bounds its own shutdown steps.
        _, pending = await asyncio.wait({owner}, timeout=10.0)
        if pending:
            owner.cancel()
            await asyncio.wait({owner})

    @property
    def offers_resources(self) -> bool:
        """Whether the (started) server declared resources."""
        client = self._client
        return client is not None and client.server_capabilities.resources is not None

    @property
    def failure(self) -> str | None:
        return self._failure

    def unavailable(self, why: str) -> McpUnavailable:
        hint = "Check the server's definition (`xclaw mcp list`)"
        if isinstance(self.config, StdioServer):
            hint += f" and its log {self.log_path}"
        return McpUnavailable(
            f"The MCP server {self.name!r} is unavailable: {why}.",
            hint=hint + "; use other tools meanwhile.",
            data={"server": self.name},
        )

    # -- listings ---------------------------------------------------------------------------
    async def list_tools(self) -> list[types.Tool]:
        client = await self.client()
        return await _all_pages(lambda c: client.list_tools(cursor=c), "tools", self)

    async def list_resources(self) -> list[types.Resource]:
        client = await self.client()
        if client.server_capabilities.resources is None:
            return []
        return await _all_pages(lambda c: client.list_resources(cursor=c), "resources", self)

    async def list_prompts(self) -> list[types.Prompt]:
        client = await self.client()
        if client.server_capabilities.prompts is None:
            return []
        return await _all_pages(lambda c: client.list_prompts(cursor=c), "prompts", self)


_CLIENT_INFO = types.Implementation(name="xclaw", version="0")


async def _all_pages(fetch: Any, field: str, conn: McpConnection) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    try:
        async with asyncio.timeout(conn.config.startup_timeout_s):
            for _ in range(_PAGES):
                page = await fetch(cursor)
                items.extend(getattr(page, field))
                cursor = page.next_cursor
                if not cursor:
                    break
    except TimeoutError:
        raise conn.unavailable(f"listing its {field} timed out") from None
    except (MCPError, OSError) as err:
        raise conn.unavailable(f"listing its {field} failed: {describe_error(err)}") from None
    return items


def describe_error(err: BaseException) -> str:
    """One line for an error, secrets masked; task groups wrap the real cause."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    text = str(err) or type(err).__name__
    return redact(f"{type(err).__name__}: {text}")[:500]
