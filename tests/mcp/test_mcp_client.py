"""MCP servers' tools in a coding run: the demo server over stdio and HTTP, under the policy."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from mcp_support import stdio_definition

from xclaw.coding.agent import Agent
from xclaw.coding.toolset import coding_registry
from xclaw.core.messages import ToolResult
from xclaw.core.state import RunResult
from xclaw.mcp.runtime import mcp_tools, register_mcp_tools
from xclaw.models._http import ToolNames
from xclaw.models.scripted import ScriptedModel
from xclaw.tools.base import tool
from xclaw.tools.registry import ToolRegistry


def call(name: str, call_id: str = "c1", **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def recorded(calls: Path) -> str:
    """What the demo server's destructive tool did: empty when it never ran."""
    return calls.read_text() if calls.exists() else ""


async def run_script(
    root: Path, section: dict[str, Any], turns: list[Any], approval: str = "deny"
) -> tuple[RunResult, list[str]]:
    warnings: list[str] = []
    async with mcp_tools(root, section, warn=warnings.append) as tools:
        model = ScriptedModel(turns)
        agent = Agent(
            model,
            root,
            [*coding_registry(), *tools],
            approval="allow" if approval == "allow" else "deny",
            evidence_gate_enabled=False,
        )
        result = await agent.run("Use the demo MCP server.")
        model.assert_complete()
    return result, warnings


async def test_a_run_calls_mcp_tools_over_stdio_under_the_policy(
    root: Path, stdio_section: dict[str, Any], calls: Path
) -> None:
    result, warnings = await run_script(
        root,
        stdio_section,
        [
            {**call("mcp.demo.add", a=2, b=40), "expect": {"tools_include": ["mcp.demo.add"]}},
            {**call("mcp.demo.delete_record", "c2", key=5), "expect": {"last_contains": ["42"]}},
            call("mcp.demo.delete_record", "c3", key="k1"),
            call("mcp.read_resource", "c4", server="demo", uri="note://readme"),
            call("mcp.read_resource", "c5", server="nope", uri="note://readme"),
            {"text": "The sum is 42."},
        ],
        approval="deny",
    )
    assert result.ok and warnings == []
    added, invalid, denied, note, unknown = result.tool_calls
    assert note.result.ok and note.result.data["content"] == "demo notes"
    assert unknown.result.error_code == "MCP_SERVER_NOT_FOUND"
    assert added.result.ok and added.result.data["content"] == "42" and added.risk == "read"
    # the server's schema is checked before anything is sent
    assert invalid.result.error_code == "TOOL_ARGUMENTS_INVALID"
    assert "key: 5 is not of type 'string'" in invalid.result.message
    # destructive: asked, denied, never sent
    assert denied.risk == "destructive" and denied.result.error_code == "APPROVAL_DENIED"
    assert recorded(calls) == ""


async def test_a_run_calls_mcp_tools_over_streamable_http(
    root: Path, http_url: str, calls: Path
) -> None:
    section = {"servers": {"web": {"type": "http", "url": http_url, "timeout": 5}}}
    result, _ = await run_script(
        root,
        section,
        [
            call("mcp.web.add", a=1, b=2),
            call("mcp.web.delete_record", "c2", key="k1"),
            {"text": "3", "expect": {"last_ok": True}},
        ],
        approval="allow",
    )
    added, deleted = result.tool_calls
    assert added.result.ok and added.result.data["content"] == "3"
    assert deleted.result.ok and deleted.result.data["content"] == "deleted k1"
    assert recorded(calls) == "delete_record k1\n"  # approved: it ran, once


async def test_failing_hanging_and_crashing_servers_are_coded_results_and_the_run_goes_on(
    root: Path, calls: Path
) -> None:
    result, _ = await run_script(
        root,
        {"servers": {"demo": stdio_definition(calls, timeout=1)}},
        [
            call("mcp.demo.fail", "c1", reason="bad"),
            call("mcp.demo.hang", "c2", seconds=30),
            call("mcp.demo.add", "c3", a=1, b=1),
            call("mcp.demo.crash", "c4"),
            call("mcp.demo.add", "c5", a=1, b=1),
            call("fs.list", "c6", path="."),
            {"text": "recovered"},
        ],
    )
    failed, hung, added, crashed, after, listed = result.tool_calls
    assert failed.result.error_code == "MCP_TOOL_ERROR"
    assert "failed on purpose: bad" in failed.result.message
    assert hung.result.error_code == "MCP_TIMEOUT" and hung.result.retryable
    assert added.result.ok and added.result.data["content"] == "2"
    assert crashed.result.error_code == "MCP_SERVER_UNAVAILABLE"
    assert after.result.error_code == "MCP_SERVER_UNAVAILABLE"
    assert listed.result.ok and result.ok and result.reply == "recovered"


async def test_a_server_that_cannot_start_is_a_warning_not_a_failure(root: Path) -> None:
    section = {"servers": {"gone": {"command": str(root / "no-such-program"), "startupTimeout": 5}}}
    warnings: list[str] = []
    async with mcp_tools(root, section, warn=warnings.append) as tools:
        assert tools == []
    assert (
        len(warnings) == 1 and "MCP_SERVER_UNAVAILABLE" in warnings[0] and "'gone'" in warnings[0]
    )


def read_pid(path: Path) -> int:
    return int(path.read_text())


async def test_a_server_that_never_answers_is_stopped_after_its_startup_timeout(
    root: Path,
) -> None:
    pidfile = root / "pid"
    silent = {"command": "sh", "args": ["-c", f"echo $$ > {pidfile}; exec sleep 60"]}
    warnings: list[str] = []
    async with mcp_tools(
        root, {"servers": {"mute": {**silent, "startupTimeout": 1}}}, warn=warnings.append
    ) as tools:
        assert tools == []
        assert not _alive(read_pid(pidfile))  # stopped already, not left to the end
    (warning,) = warnings
    assert "MCP_SERVER_UNAVAILABLE" in warning and "did not answer within 1s" in warning


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_stdio_servers_get_no_credentials_unless_listed_and_always_stop(
    root: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_API_TOKEN", "tok-123456")
    monkeypatch.setenv("DEMO_PLAIN", "plain")
    definition = stdio_definition(calls)
    definition["env"]["GIVEN_TOKEN"] = "${DEMO_API_TOKEN}"
    seen: dict[str, str] = {}
    with pytest.raises(RuntimeError, match="boom"):
        async with mcp_tools(root, {"servers": {"demo": definition}}) as tools:
            by_name = {t.name: t for t in tools}
            for name in ("DEMO_API_TOKEN", "DEMO_PLAIN", "GIVEN_TOKEN", "PATH"):
                result = await by_name["mcp.demo.env_probe"].fn(payload={"name": name})
                seen[name] = result.data["content"]
            pid = int((await by_name["mcp.demo.pid"].fn(payload={})).data["content"])
            assert _alive(pid)
            raise RuntimeError("boom")
    assert not _alive(pid)  # stopped (and reaped) although the run failed
    assert seen["DEMO_API_TOKEN"] == "<unset>" and seen["DEMO_PLAIN"] == "<unset>"
    assert seen["GIVEN_TOKEN"] == "tok-123456" and seen["PATH"] != "<unset>"


async def test_a_trusted_project_server_is_listed_with_tools_resources_and_prompts(
    root: Path, calls: Path
) -> None:
    from xclaw.mcp import trust
    from xclaw.mcp.runtime import describe_servers
    from xclaw.mcp.settings import project_servers

    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": stdio_definition(calls)}}))
    trust.trust(root, "demo", project_servers(root)["demo"].fingerprint)
    (row,) = await describe_servers(root, {})
    assert row["usable"] and (row["source"], row["transport"]) == ("project", "stdio")
    names = {t["name"]: t["risk"] for t in row["tools"]}
    assert names["mcp.demo.add"] == "read" and names["mcp.demo.delete_record"] == "destructive"
    assert [r["uri"] for r in row["resources"]] == ["note://readme"]
    assert row["prompts"] == [
        {"name": "review", "description": "Review a file.", "arguments": ["path"]}
    ]


OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # OpenAI's function names; Claude's too


async def test_server_tool_names_reach_every_model_api_valid_and_map_back(
    root: Path, stdio_section: dict[str, Any]
) -> None:
    async with mcp_tools(root, stdio_section) as tools:
        wire = ToolNames([*coding_registry().names(), *(t.name for t in tools)])
        mine = [t.name for t in tools]
        assert "mcp.demo.notes_search" in mine  # the server's "notes.search"
        assert all(OPENAI_NAME.match(wire.wire(n)) and wire.real(wire.wire(n)) == n for n in mine)
    result, _ = await run_script(
        root,
        stdio_section,
        [call("mcp.demo.notes_search", query="tabs"), {"text": "none"}],
    )
    (found,) = result.tool_calls
    assert found.result.ok and found.result.data["content"] == "no note mentions tabs"


def test_an_mcp_tool_meeting_a_registered_one_on_the_wire_is_left_out() -> None:
    @tool("mcp_demo_add")
    def plugin_add() -> ToolResult:
        """A plugin's tool whose name a provider would confuse with mcp.demo.add."""
        return ToolResult.success("plugin")

    @tool("mcp.demo.add")
    def server_add() -> ToolResult:
        """Stands for the server's add."""
        return ToolResult.success("server")

    @tool("mcp.demo.pid")
    def server_pid() -> ToolResult:
        """Stands for the server's pid."""
        return ToolResult.success("1")

    registry = ToolRegistry([plugin_add])
    warnings: list[str] = []
    added = register_mcp_tools(registry, [server_add, server_pid], warnings.append)
    assert added == ["mcp.demo.pid"] and registry.get("mcp.demo.add") is None
    (warning,) = warnings
    assert "mcp.demo.add is left out" in warning and "mcp_demo_add" in warning
    ToolNames(registry.names())  # what a model request builds: no collision left
