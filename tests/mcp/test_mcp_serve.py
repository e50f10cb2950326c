"""``xclaw mcp serve`` driven by the official MCP client over stdio; the policy is ours."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from xclaw.cli.app import app as root_app
from xclaw.cli.mcp_cmd import app
from xclaw.coding.toolset import coding_registry
from xclaw.core.errors import ConfigError
from xclaw.mcp.serve import ServedNames, ToolService
from xclaw.mcp.settings import serve_settings, user_servers
from xclaw.tools.base import tool
from xclaw.tools.registry import ToolRegistry

LAUNCH = "from xclaw.cli.mcp_cmd import app; app()"  # `xclaw mcp serve` without app.py
STRICT_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # Claude Desktop's, Windsurf's, OpenAI's


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


def launch(root: Path, *flags: str) -> StdioServerParameters:
    env = {k: os.environ[k] for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "PATH")}
    return StdioServerParameters(
        command=sys.executable, args=["-c", LAUNCH, "serve", "-C", str(root), *flags], env=env
    )


def user_config(text: str) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "xclaw" / "xclaw.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def test_the_official_client_lists_and_calls_xclaw_tools_under_policy(root: Path) -> None:
    outside = project(root)
    async with Client(launch(root)) as client:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert {"fs_read", "fs_write", "terminal_exec"} <= set(tools)
        assert all(STRICT_NAME.match(name) for name in tools)  # no dots by default
        assert tools["fs_read"].annotations and tools["fs_read"].annotations.read_only_hint
        assert tools["fs_read"].input_schema["properties"]["path"]["type"] == "string"

        inside = await client.call_tool("fs_read", {"path": "hello.txt"})
        assert not inside.is_error and "hi there" in body(inside)["data"]["content"]
        dotted = await client.call_tool("fs.read", {"path": "hello.txt"})  # hints quote it
        assert not dotted.is_error and "hi there" in body(dotted)["data"]["content"]

        away = await client.call_tool("fs_read", {"path": str(outside)})
        refused = body(away)
        assert away.is_error and refused["error_code"] == "APPROVAL_UNAVAILABLE"
        assert refused["data"]["policy_code"] == "PATH_OUTSIDE_ROOT"

        rm = await client.call_tool("terminal_exec", {"program": "rm", "argv": ["-rf", "victim"]})
        assert rm.is_error and body(rm)["error_code"] in ("APPROVAL_UNAVAILABLE", "COMMAND_DENIED")
        assert still_there(root / "victim" / "keep.txt")

        bad = await client.call_tool("fs_read", {"path": 3})
        assert bad.is_error and body(bad)["error_code"] == "TOOL_ARGUMENTS_INVALID"


async def test_dotted_names_come_from_the_config_and_the_flag_wins(root: Path) -> None:
    project(root)
    user_config("mcp:\n  serve:\n    tool_names: dotted\n")
    async with Client(launch(root)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"fs.read", "terminal.exec"} <= names and "fs_read" not in names
        for name in ("fs.read", "fs_read"):  # either form is understood
            read = await client.call_tool(name, {"path": "hello.txt"})
            assert not read.is_error and "hi there" in body(read)["data"]["content"]
    async with Client(launch(root, "--tool-names", "underscore")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "fs_read" in names and all(STRICT_NAME.match(n) for n in names)


def test_a_bad_name_setting_is_refused_before_serving(root: Path) -> None:
    runner = CliRunner()
    flag = runner.invoke(root_app, ["mcp", "serve", "-C", str(root), "--tool-names", "slash"])
    assert flag.exit_code == 2 and flag.output.startswith("USAGE_INVALID: ")
    assert "'slash' is not one of 'underscore', 'dotted'" in flag.output
    user_config("mcp:\n  serve:\n    tool_names: camel\n")
    config = runner.invoke(app, ["serve", "-C", str(root)])
    assert config.exit_code == 2 and "MCP_CONFIG_INVALID" in config.output
    assert "tool_names" in config.output
    assert user_servers({"serve": {"tool_names": "dotted"}}) == {}  # runs read beside it
    with pytest.raises(ConfigError, match="unknown keys"):
        serve_settings({"serv": {"tool_names": "dotted"}})


def named(name: str) -> Any:
    @tool(name)
    def probe() -> str:
        """A tool that is only named."""
        return name

    return probe


def test_two_tools_on_one_served_name_are_a_coded_error_at_start(root: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        ServedNames(["fs.read", "fs_read"])
    assert caught.value.code == "MCP_TOOL_NAME_COLLISION"
    assert "'fs.read' and 'fs_read'" in caught.value.message
    registry = ToolRegistry([named("a.b"), named("a_b")])
    with pytest.raises(ConfigError, match="both be served as 'a_b'"):
        ToolService(root, registry=registry)
    both = ServedNames(["a.b", "a_b", "c.d", "c-d.e", "c-d_e"], "dotted")  # names kept
    assert (both.real("a.b"), both.real("a_b"), both.real("c_d")) == ("a.b", "a_b", "c.d")
    assert both.real("c-d_e") == "c-d_e" and both.real("x_y") is None
    with pytest.raises(ConfigError) as long:
        ServedNames(["x." + "y" * 70], "dotted")
    assert long.value.code == "MCP_TOOL_NAME_INVALID"


def test_served_names_map_back_and_the_default_is_spec_safe() -> None:
    names = ServedNames(["fs.read", "terminal.exec", "git-status"])
    assert names.served() == ["fs_read", "terminal_exec", "git-status"]
    assert names.real("fs_read") == names.real("fs.read") == "fs.read"
    assert names.real("fs-read") is None and names.real("nope") is None


async def test_an_unknown_name_is_answered_with_the_served_names(root: Path) -> None:
    service = ToolService(root, registry=coding_registry())
    try:
        result = await service.call("fs.nope", {})
        assert result.error_code == "TOOL_NOT_FOUND" and "fs_read" in (result.hint or "")
        assert "fs.read" not in (result.hint or "")
    finally:
        await service.aclose()


async def test_approval_allow_lets_asking_calls_run_but_never_denied_ones(root: Path) -> None:
    outside = project(root)
    service = ToolService(root, "allow", registry=coding_registry())
    try:
        away = await service.call("fs_read", {"path": str(outside)})
        assert away.ok and "secret-ish" in away.data["content"]
        kernel = await service.call("fs_read", {"path": "/proc/self/environ"})
        assert not kernel.ok and kernel.error_code == "PATH_SPECIAL"
    finally:
        await service.aclose()
