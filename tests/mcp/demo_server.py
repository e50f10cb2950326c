"""A small MCP server for the client tests: ``python demo_server.py stdio|http PORT``.

``delete_record`` appends to the file named by ``DEMO_CALLS`` so a test can prove whether it
ran; ``crash`` kills the process; ``hang`` never answers in time.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("demo")
READ_ONLY = ToolAnnotations(readOnlyHint=True)


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool(annotations=READ_ONLY)
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool(annotations=READ_ONLY)
def env_probe(name: str) -> str:
    """The value of one environment variable of the server, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def delete_record(key: str) -> str:
    """Delete a record (destructive)."""
    with Path(os.environ["DEMO_CALLS"]).open("a", encoding="utf-8") as f:
        f.write(f"delete_record {key}\n")
    return f"deleted {key}"


@server.tool(annotations=READ_ONLY)
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool(annotations=READ_ONLY)
def crash() -> str:
    """Kill the server process."""
    os._exit(3)


@server.tool(annotations=READ_ONLY)
async def hang(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "woke up"


@server.tool(name="notes.search", annotations=READ_ONLY)
def notes_search(query: str) -> str:
    """Search the notes (a dotted name, as the MCP spec allows)."""
    return f"no note mentions {query}"


@server.resource("note://readme", name="readme", description="A short note.")
def readme() -> str:
    return "demo notes"


@server.prompt(name="review", description="Review a file.")
def review(path: str) -> str:
    return f"Please review {path}."


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
