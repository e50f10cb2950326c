"""The MCP servers of one run: which are usable, their tools, and closing them all at the end.

async with mcp_tools(root, config) as tools:      # list[Tool], servers already listed
    agent = Agent(model, root, [*coding_registry(), *tools])
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from xclaw.core.errors import XclawError
from xclaw.core.tooling import wire_tool_name
from xclaw.mcp.settings import ServerEntry, project_servers, user_servers
from xclaw.mcp.trust import is_trusted

if TYPE_CHECKING:  # the SDK takes a second to import: only when a server is configured
    from xclaw.mcp.connection import McpConnection
    from xclaw.tools.base import Tool
    from xclaw.tools.registry import ToolRegistry

Warn = Callable[[str], None]
T = TypeVar("T")


@dataclass(slots=True)
class ServerStatus:
    entry: ServerEntry
    usable: bool
    why: str = ""  # why not usable


@dataclass(slots=True)
class McpHub:
    """The configured servers of a project; connections open on first use."""

    root: Path
    statuses: list[ServerStatus] = field(default_factory=list)
    connections: dict[str, McpConnection] = field(default_factory=dict)

    @classmethod
    def from_config(cls, root: Path, mcp_section: Mapping[str, Any]) -> McpHub:
        hub = cls(root.resolve())
        hub.statuses = server_statuses(hub.root, mcp_section)
        if any(s.usable for s in hub.statuses):
            from xclaw.mcp.connection import McpConnection

            for status in hub.statuses:
                if status.usable:
                    hub.connections[status.entry.name] = McpConnection(status.entry, hub.root)
        return hub

    async def tools(self, warn: Warn) -> list[Tool]:
        """Every usable server's tools; a server that fails to start is reported, not fatal."""
        if not self.connections:
            return []
        from xclaw.mcp.tools import RESOURCE_TOOL, adapt_tools, resource_tool

        found: list[Tool] = []
        # providers see ``mcp_a_b``: two names must not meet there, nor the resource tool's
        wires: set[str] = {wire_tool_name(RESOURCE_TOOL)}
        listings = await asyncio.gather(
            *(adapt_tools(c) for c in self.connections.values()), return_exceptions=True
        )
        for listing in listings:
            if isinstance(listing, BaseException):
                if not isinstance(listing, XclawError):
                    raise listing
                warn(str(listing))
                continue
            tools, problems = listing
            for problem in problems:
                warn(problem)
            for t in tools:
                wire = wire_tool_name(t.name)
                if len(t.name) > 64 or wire in wires:
                    warn(f"{t.name} is left out: its name is too long or collides on the wire")
                    continue
                wires.add(wire)
                found.append(t)
        catalogue = await self._resource_catalogue()
        if catalogue:
            found.append(resource_tool(self.connections, catalogue))
        return found

    async def _resource_catalogue(self) -> list[str]:
        """``server uri`` of every resource listed by a started server (a bounded few)."""
        offering = [c for c in self.connections.values() if c.offers_resources]
        listings = await asyncio.gather(
            *(c.list_resources() for c in offering), return_exceptions=True
        )
        lines: list[str] = []
        for conn, listing in zip(offering, listings, strict=True):
            if isinstance(listing, list):
                lines.extend(f"{conn.name} {r.uri}" for r in listing)
        return lines

    async def aclose(self) -> None:
        await asyncio.gather(*(c.close() for c in self.connections.values()))


def server_statuses(root: Path, mcp_section: Mapping[str, Any]) -> list[ServerStatus]:
    """The user's servers, then the project's: trusted ones usable, a user one of the same
    name winning."""
    mine = user_servers(mcp_section)
    out = [ServerStatus(entry, entry.config is not None, entry.error) for entry in mine.values()]
    for name, entry in project_servers(root).items():
        if entry.config is None:
            out.append(ServerStatus(entry, False, entry.error))
        elif name in mine:
            out.append(ServerStatus(entry, False, "the user config defines a server of that name"))
        elif is_trusted(root, name, entry.fingerprint):
            out.append(ServerStatus(entry, True))
        else:
            why = f"not trusted: run `xclaw mcp trust {name}` after reading its definition"
            out.append(ServerStatus(entry, False, why))
    return out


def register_mcp_tools(registry: ToolRegistry, tools: list[Tool], warn: Warn) -> list[str]:
    """Add the MCP tools a registry can take: a name already there, or one that meets a
    registered tool's on the wire (``fs_read`` of ``fs.read``), is left out with a warning
    rather than failing every model request of the run. The names registered."""
    wires = {wire_tool_name(name): name for name in registry.names()}
    added: list[str] = []
    for t in tools:
        other = wires.get(wire_tool_name(t.name))
        if other is not None:
            warn(f"{t.name} is left out: {other} is already a tool of that (wire) name")
            continue
        registry.register(t)
        wires[wire_tool_name(t.name)] = t.name
        added.append(t.name)
    return added


def _stderr(text: str) -> None:
    print(f"mcp: {text}", file=sys.stderr)


def _warn_unused(hub: McpHub, warn: Warn) -> None:
    for status in hub.statuses:
        if not status.usable:
            warn(f"server {status.entry.name!r} ({status.entry.source}) is not used: {status.why}")


@asynccontextmanager
async def mcp_tools(
    root: Path, mcp_section: Mapping[str, Any], *, warn: Warn = _stderr
) -> AsyncIterator[list[Tool]]:
    """The run's MCP tools; every server started is stopped on the way out, whatever happens.

    A project server that is not trusted is skipped with a warning; a bad definition is a
    ``ConfigError``.
    """
    hub = McpHub.from_config(root, mcp_section)
    _warn_unused(hub, warn)
    try:
        yield await hub.tools(warn)
    finally:
        await hub.aclose()


async def describe_servers(root: Path, mcp_section: Mapping[str, Any]) -> list[dict[str, Any]]:
    """For ``xclaw mcp list``: every server, and for the usable ones what they offer."""
    hub = McpHub.from_config(root, mcp_section)
    try:
        return list(await asyncio.gather(*(_describe_one(hub, s) for s in hub.statuses)))
    finally:
        await hub.aclose()


async def _describe_one(hub: McpHub, status: ServerStatus) -> dict[str, Any]:
    entry = status.entry
    row: dict[str, Any] = {
        "name": entry.name,
        "source": entry.source,
        "transport": entry.transport,
        "definition": entry.raw,
        "usable": status.usable,
    }
    if not status.usable:
        return row | {"why": status.why}
    from xclaw.mcp.tools import adapt_tools

    conn = hub.connections[entry.name]
    try:
        tools, problems = await adapt_tools(conn)
        resources = await conn.list_resources()
        prompts = await conn.list_prompts()
    except XclawError as err:
        return row | {"error": str(err)}
    return row | {
        "tools": [
            {"name": t.name, "risk": str(t.risk), "description": t.description} for t in tools
        ],
        "resources": [
            {"uri": r.uri, "name": r.name, "description": r.description} for r in resources
        ],
        "prompts": [
            {
                "name": p.name,
                "description": p.description,
                "arguments": [a.name for a in p.arguments or []],
            }
            for p in prompts
        ],
        "warnings": problems,
    }


def with_mcp_tools(
    start: Callable[[Any], Awaitable[T]],
    registry: ToolRegistry,
    root: Path,
    mcp_section: Mapping[str, Any],
    *,
    warn: Warn = _stderr,
) -> Callable[[Any], Awaitable[T]]:
    """``start`` with the MCP servers' tools in ``registry`` for its duration, and every
    server stopped when it returns or fails. A bad definition is a warning: the run goes on
    without MCP tools rather than not at all."""

    async def started(control: Any) -> T:
        try:
            hub = McpHub.from_config(root, mcp_section)
        except XclawError as err:
            warn(f"no MCP servers this run: {err}")
            return await start(control)
        _warn_unused(hub, warn)
        try:
            register_mcp_tools(registry, await hub.tools(warn), warn)
            return await start(control)
        finally:
            await hub.aclose()

    return started
