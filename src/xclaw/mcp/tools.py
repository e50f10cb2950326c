"""An MCP server's tools as xclaw tools: ``mcp.<server>.<tool>``, under our policy.

The server's own name for the tool is what is called; model APIs are shown
``mcp_<server>_<tool>`` (``wire_tool_name``, mapped back per request), and the hub leaves out a
tool whose name is over 64 characters or meets another's there.

The server's input schema is what the model is shown, and ``jsonschema`` checks the model's
arguments against it before anything is sent. Risk comes from the tool's annotations, read
with the MCP defaults (a tool that says nothing may be destructive):

    readOnlyHint: true                        read         runs without asking
    destructiveHint: false, openWorldHint: false   execute  runs like other tools
    destructiveHint: false (open world)       external     asks
    anything else                             destructive  asks
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

import jsonschema
import mcp_types as types
from jsonschema.exceptions import SchemaError
from mcp import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import BaseModel, ConfigDict, model_validator

from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import NO_ACCESS, Risk, ToolSpec
from xclaw.mcp.connection import McpConnection, McpUnavailable, describe_error
from xclaw.tools.base import Tool, tool

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
RESOURCE_TOOL = "mcp.read_resource"


def tool_name(server: str, name: str) -> str:
    return f"mcp.{server}.{_UNSAFE.sub('_', name)}"


def risk_of(annotations: types.ToolAnnotations | None) -> Risk:
    a = annotations or types.ToolAnnotations()
    if a.read_only_hint is True:
        return Risk.READ
    if a.destructive_hint is False:
        return Risk.EXECUTE if a.open_world_hint is False else Risk.EXTERNAL
    return Risk.DESTRUCTIVE


class McpArguments(BaseModel):
    """Arguments checked against one server tool's JSON schema, kept whole as ``payload``."""

    model_config = ConfigDict(frozen=True)
    payload: dict[str, Any]
    server_schema: ClassVar[dict[str, Any]] = {}
    validator: ClassVar[Any] = None

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("arguments must be a JSON object")
        errors = sorted(cls.validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            raise ValueError("; ".join(_error_line(e) for e in errors[:5]))
        return {"payload": data}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(cls.server_schema)


def _error_line(err: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in err.absolute_path) or "(arguments)"
    return f"{where}: {err.message}"


def _arguments_model(name: str, schema: dict[str, Any]) -> type[McpArguments]:
    validator_cls = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    validator_cls.check_schema(schema)
    return type(
        re.sub(r"\W", "_", name) + "Args",
        (McpArguments,),
        {"server_schema": schema, "validator": validator_cls(schema)},
    )


def adapt_tool(conn: McpConnection, remote: types.Tool) -> Tool:
    """One server tool as an xclaw ``Tool``; raises ``SchemaError`` for an unusable schema."""
    name = tool_name(conn.name, remote.name)
    schema = dict(remote.input_schema)
    schema.pop("title", None)
    args_model = _arguments_model(name, schema)
    risk = risk_of(remote.annotations)
    cfg = conn.config

    async def call(payload: dict[str, Any]) -> ToolResult:
        return await call_remote(conn, remote.name, payload, cfg.timeout_s)

    title = (remote.annotations.title if remote.annotations else None) or remote.title
    description = (remote.description or title or remote.name).strip()
    t = Tool(
        name=name,
        description=f"[MCP server {conn.name}] {description}"[:4000],
        fn=call,
        args_model=args_model,
        risk=risk,
        read_only=risk is Risk.READ,
        timeout_s=cfg.timeout_s + 5.0,  # our own timeout below answers first, with MCP_TIMEOUT
        output_cap=cfg.output_cap,
        wants_context=False,
        access=lambda _args: NO_ACCESS,
    )
    t.spec = ToolSpec(name, t.description, schema, t.read_only, risk)  # the server's own
    return t


async def adapt_tools(conn: McpConnection) -> tuple[list[Tool], list[str]]:
    """The server's tools, and one warning per tool left out."""
    tools: list[Tool] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for remote in await conn.list_tools():
        name = tool_name(conn.name, remote.name)
        if name in seen:
            warnings.append(f"{conn.name}: tool {remote.name!r} collides with another as {name}")
            continue
        try:
            tools.append(adapt_tool(conn, remote))
        except SchemaError as err:
            warnings.append(
                f"{conn.name}: tool {remote.name!r} has an invalid schema: {err.message}"
            )
            continue
        seen.add(name)
    return tools, warnings


async def call_remote(
    conn: McpConnection, remote: str, payload: dict[str, Any], timeout_s: float
) -> ToolResult:
    client = await conn.client()
    label = f"{conn.name}/{remote}"
    try:
        async with asyncio.timeout(timeout_s):
            result = await client.call_tool(remote, payload, read_timeout_seconds=timeout_s)
    except TimeoutError:
        raise _timed_out(label, timeout_s) from None
    except MCPError as err:
        if err.code == CONNECTION_CLOSED:
            raise conn.unavailable(f"it closed the connection during {label}") from None
        if err.code == REQUEST_TIMEOUT:
            raise _timed_out(label, timeout_s) from None
        raise ToolError(
            f"The MCP server refused {label}: {describe_error(err)}",
            code="MCP_TOOL_ERROR",
            hint="Check the arguments against the tool's description.",
            retryable=True,
        ) from None
    except (McpUnavailable, ToolError):
        raise
    except Exception as err:  # noqa: BLE001 - a dropped connection or broken server
        raise McpUnavailable(
            f"The MCP server {conn.name!r} failed during {label}: {describe_error(err)}",
            hint="Use other tools meanwhile; the server may need a restart (a new run).",
            data={"server": conn.name},
        ) from None
    return result_of(label, result)


def resource_tool(connections: Mapping[str, McpConnection], catalogue: list[str]) -> Tool:
    """``mcp.read_resource``: one resource of a server, by the URI its listing gave;
    ``catalogue`` (``server uri`` lines) joins the description, the first 30 of them."""
    servers = sorted(connections)

    @tool(RESOURCE_TOOL, risk=Risk.READ, timeout_s=120.0)
    async def read_resource(server: str, uri: str) -> ToolResult:
        """Read a resource an MCP server offers (see `xclaw mcp list` for their URIs).

        Args:
            server: The server's name, e.g. the `demo` of `mcp.demo.add`.
            uri: The resource's URI as the server lists it.
        """
        conn = connections.get(server)
        if conn is None:
            raise ToolError(
                f"There is no MCP server {server!r} in this run.",
                code="MCP_SERVER_NOT_FOUND",
                hint="Use one of: " + (", ".join(servers) or "(none)"),
                retryable=True,
            )
        client = await conn.client()
        label = f"{server}/{uri}"
        timeout_s = conn.config.timeout_s
        try:
            async with asyncio.timeout(timeout_s):
                result = await client.read_resource(uri)
        except TimeoutError:
            raise _timed_out(label, timeout_s) from None
        except MCPError as err:
            if err.code == CONNECTION_CLOSED:
                raise conn.unavailable(f"it closed the connection during {label}") from None
            raise ToolError(
                f"The MCP server refused to read {label}: {describe_error(err)}",
                code="MCP_RESOURCE_ERROR",
                hint="Check the URI against the server's resource list.",
                retryable=True,
            ) from None
        parts = [
            c.text
            if isinstance(c, types.TextResourceContents)
            else f"[binary {c.mime_type or 'data'}, {len(c.blob) * 3 // 4} bytes]"
            for c in result.contents
        ]
        return ToolResult.success(f"Read {label}.", content="\n".join(parts))

    shown = "; ".join(catalogue[:30]) + (" ..." if len(catalogue) > 30 else "")
    read_resource.description += f" Available: {shown}"[:3000]
    read_resource.spec = replace(read_resource.spec, description=read_resource.description)
    return read_resource


def _timed_out(label: str, timeout_s: float) -> ToolError:
    return ToolError(
        f"The MCP tool {label} did not answer within {timeout_s:g}s.",
        code="MCP_TIMEOUT",
        hint="Try a smaller request, or raise the server's timeout in its definition.",
        retryable=True,
    )


def result_of(label: str, result: types.CallToolResult) -> ToolResult:
    text = "\n".join(_block_text(b) for b in result.content)
    if result.is_error:
        return ToolResult.failure(
            "MCP_TOOL_ERROR",
            f"The MCP tool {label} reported an error: {text[:2000] or '(no detail)'}",
            hint="Read the error, fix the arguments or try another approach.",
            retryable=True,
        )
    data: dict[str, Any] = {"content": text}
    if result.structured_content is not None:
        data["structured"] = result.structured_content
    return ToolResult.success(f"{label} answered.", **data)


def _block_text(block: Any) -> str:
    match block:
        case types.TextContent():
            return block.text
        case types.ImageContent() | types.AudioContent():
            return f"[{block.type}: {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
        case types.EmbeddedResource():
            res = block.resource
            if isinstance(res, types.TextResourceContents):
                return res.text
            return f"[resource {res.uri}: {res.mime_type or 'binary'}]"
        case types.ResourceLink():
            return f"[resource link {block.uri}: {block.name}]"
        case _:
            return f"[{getattr(block, 'type', 'content')}]"
