"""``xclaw mcp serve``: a tool registry (the coding tools of one project, as
``xclaw.compose.coding.coding_tools`` assembles them) offered to an MCP client over stdio.

Every call goes through the same path as in a run: the arguments are validated, the policy
judges what the call would touch (paths inside the root, command rules), then the tool runs
with its own timeout and output cap. There is no human on an MCP stdio channel to answer a
question, so a call the policy would *ask* about is refused (``APPROVAL_UNAVAILABLE``) unless
the server was started with ``--approval allow``; a call the policy denies is always refused.

Tool names: ``fs_read`` by default (``underscore``), since several clients accept only
``^[a-zA-Z0-9_-]{1,64}$`` although the MCP spec (SEP-986) allows dots; ``dotted`` serves
``fs.read``. A call may use either form; two tools on one served name fail at start.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from xclaw.core.errors import ConfigError
from xclaw.core.limits import Limits
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.sandbox import Sandbox
from xclaw.core.tooling import Decision, PreparedCall, Risk, ToolSpec, wire_tool_name
from xclaw.mcp.settings import ToolNameStyle
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.base import Workspace
from xclaw.tools.registry import BoundToolbox, ToolRegistry

ServeApproval = Literal["deny", "allow"]
_SPEC_NAME = re.compile(r"^[A-Za-z0-9_./-]{1,64}$")  # SEP-986: characters and length


class ServedNames:
    """xclaw's tool names and the names a client is shown, both ways, fixed at start."""

    def __init__(self, names: Iterable[str], style: ToolNameStyle = "underscore") -> None:
        self._shown: dict[str, str] = {}
        self._real: dict[str, str] = {}
        for name in names:
            shown = wire_tool_name(name) if style == "underscore" else name
            other = self._real.get(shown)
            if other is not None and other != name:
                raise ConfigError(
                    f"xclaw's tools {other!r} and {name!r} would both be served as {shown!r}.",
                    code="MCP_TOOL_NAME_COLLISION",
                    hint="Serve with --tool-names dotted, or rename one of the tools.",
                )
            if not _SPEC_NAME.match(shown):
                raise ConfigError(
                    f"xclaw's tool {name!r} cannot be served as {shown!r}: MCP tool names "
                    "are 1-64 letters, digits, '_', '-', '.' or '/'.",
                    code="MCP_TOOL_NAME_INVALID",
                    hint="Serve with --tool-names underscore, or rename the tool.",
                )
            self._shown[name] = shown
            self._real[shown] = name

    def shown(self, name: str) -> str:
        return self._shown[name]

    def real(self, shown: str) -> str | None:
        """The tool a client means: the served name, xclaw's own (hints quote it), or the
        underscore form of exactly one tool."""
        if shown in self._real:
            return self._real[shown]
        if shown in self._shown:
            return shown
        matches = [name for name in self._shown if wire_tool_name(name) == shown]
        return matches[0] if len(matches) == 1 else None

    def served(self) -> list[str]:
        return list(self._real)


class ToolService:
    """The policy-checked tool calls behind the MCP server, usable without any transport."""

    def __init__(
        self,
        root: Path,
        approval: ServeApproval = "deny",
        sandbox: Sandbox | None = None,
        *,
        registry: ToolRegistry,
        tool_names: ToolNameStyle = "underscore",
    ) -> None:
        self.names = ServedNames(registry.names(), tool_names)  # before anything starts
        # No sandbox given: the Workspace's default, from the user's configuration.
        self.workspace = Workspace(root, sandbox=sandbox)
        self.toolbox = BoundToolbox(registry, self.workspace)
        self.policy = PolicyEngine(self.workspace)
        self.approval = approval
        self.limits = Limits()
        self._ids = itertools.count(1)

    def tools(self) -> list[types.Tool]:
        return [_describe(spec, self.names.shown(spec.name)) for spec in self.toolbox.specs()]

    async def call(self, name: str, arguments: dict[str, Any] | None) -> ToolResult:
        real = self.names.real(name)
        if real is None:
            return ToolResult.failure(
                "TOOL_NOT_FOUND",
                f"There is no tool named {name!r}.",
                hint="Use one of: " + ", ".join(self.names.served()),
                retryable=True,
            )
        call = ToolCallPart(f"mcp-{next(self._ids)}", real, arguments or {})
        prepared = self.toolbox.prepare(call)
        if isinstance(prepared, ToolResult):
            return prepared
        refused = await self._authorize(prepared)
        if refused is not None:
            return refused
        try:
            async with asyncio.timeout(self.limits.tool_timeout_s):
                return await self.toolbox.execute(prepared, _discard)
        except TimeoutError:
            return ToolResult.failure(
                "TOOL_TIMEOUT",
                f"{name} exceeded {self.limits.tool_timeout_s:g}s and was stopped.",
                hint="Split the work into smaller steps.",
                retryable=True,
            )

    async def _authorize(self, prepared: PreparedCall) -> ToolResult | None:
        unseen = await self.toolbox.inspect(prepared)
        if unseen is not None:
            return unseen
        decision = self.policy.evaluate(prepared)
        prepared.decision = decision
        if decision.action == "deny":
            return self.policy.refusal(decision, by_user=False)
        if decision.action == "ask" and self.approval != "allow":
            return _no_human(prepared.call.name, decision)
        return None

    async def aclose(self) -> None:
        await self.workspace.close()


def _no_human(name: str, decision: Decision) -> ToolResult:
    return ToolResult.failure(
        "APPROVAL_UNAVAILABLE",
        f"{name} needs a human's approval ({decision.reason or decision.risk}), and this MCP "
        "channel has no one to ask, so it was refused; nothing ran.",
        hint="Do it another way inside the project, or ask the user to run "
        "`xclaw mcp serve --approval allow`.",
        data={"policy_code": decision.code, "risk": str(decision.risk)},
    )


def _discard(_stream: str, _text: str) -> None:
    """Live output has no channel here; the result carries head and tail."""


def _describe(spec: ToolSpec, name: str) -> types.Tool:
    return types.Tool(
        name=name,
        description=spec.description,
        input_schema=spec.parameters,
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=spec.risk in (Risk.DESTRUCTIVE, Risk.WRITE),
            open_world_hint=spec.risk is Risk.EXTERNAL,
        ),
    )


def as_mcp_result(result: ToolResult) -> types.CallToolResult:
    body = result.to_dict()
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False, default=str))],
        structured_content=body,
        is_error=not result.ok,
    )


def build_server(service: ToolService) -> Server[Any]:
    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=service.tools())

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return as_mcp_result(await service.call(params.name, params.arguments))

    return Server("xclaw", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(
    root: Path,
    approval: ServeApproval = "deny",
    sandbox: Sandbox | None = None,
    *,
    registry: ToolRegistry,
    tool_names: ToolNameStyle = "underscore",
) -> None:
    """Serve ``registry`` until the client closes stdin; started processes are stopped on the
    way out. Two tools on one served name is a ``ConfigError`` before anything is served."""
    service = ToolService(root, approval, sandbox, registry=registry, tool_names=tool_names)
    server = build_server(service)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await service.aclose()
