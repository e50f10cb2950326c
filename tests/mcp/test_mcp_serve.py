"""``xclaw mcp serve`` driven by the official MCP client over stdio; the policy is ours."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from xclaw.mcp.serve import ToolService

LAUNCH = "from xclaw.cli.mcp_cmd import app; app()"  # `xclaw mcp serve` without app.py


def project(root: Path) -> Path:
    (root / "hello.txt").write_text("hi there\n")
    (root / "victim").mkdir()
    (root / "victim" / "keep.txt").write_text("keep\n")
    outside = root.parent / "outside.txt"
    outside.write_text("secret-ish\n")
    return outside


def still_there(path: Path) -> bool:
    return path.exists()


def body(result: Any) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_the_official_client_lists_and_calls_xclaw_tools_under_policy(root: Path) -> None:
    outside = project(root)
    env = {k: os.environ[k] for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "PATH")}
    params = StdioServerParameters(
        command=sys.executable, args=["-c", LAUNCH, "serve", "-C", str(root)], env=env
    )
    async with Client(params) as client:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert {"fs.read", "fs.write", "terminal.exec"} <= set(tools)
        assert tools["fs.read"].annotations and tools["fs.read"].annotations.read_only_hint
        assert tools["fs.read"].input_schema["properties"]["path"]["type"] == "string"

        inside = await client.call_tool("fs.read", {"path": "hello.txt"})
        assert not inside.is_error and "hi there" in body(inside)["data"]["content"]

        away = await client.call_tool("fs.read", {"path": str(outside)})
        refused = body(away)
        assert away.is_error and refused["error_code"] == "APPROVAL_UNAVAILABLE"
        assert refused["data"]["policy_code"] == "PATH_OUTSIDE_ROOT"

        rm = await client.call_tool("terminal.exec", {"program": "rm", "argv": ["-rf", "victim"]})
        assert rm.is_error and body(rm)["error_code"] in ("APPROVAL_UNAVAILABLE", "COMMAND_DENIED")
        assert still_there(root / "victim" / "keep.txt")

        bad = await client.call_tool("fs.read", {"path": 3})
        assert bad.is_error and body(bad)["error_code"] == "TOOL_ARGUMENTS_INVALID"


async def test_approval_allow_lets_asking_calls_run_but_never_denied_ones(root: Path) -> None:
    outside = project(root)
    service = ToolService(root, "allow")
    try:
        away = await service.call("fs.read", {"path": str(outside)})
        assert away.ok and "secret-ish" in away.data["content"]
        kernel = await service.call("fs.read", {"path": "/proc/self/environ"})
        assert not kernel.ok and kernel.error_code == "PATH_SPECIAL"
    finally:
        await service.aclose()
