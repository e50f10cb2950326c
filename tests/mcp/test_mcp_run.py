"""``xclaw run`` gives the model the user's MCP servers' tools and stops them afterwards."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from mcp_support import stdio_definition
from typer.testing import CliRunner

from xclaw.cli.app import app


def test_xclaw_run_offers_the_users_mcp_tools(root: Path, tmp_path: Path, calls: Path) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "xclaw"
    config.mkdir(parents=True)
    servers = {"servers": {"demo": stdio_definition(calls)}}
    (config / "xclaw.yaml").write_text(yaml.safe_dump({"mcp": servers}))
    script = tmp_path / "s.yaml"
    script.write_text(
        "- tool_calls: [{id: c1, name: mcp.demo.add, arguments: {a: 40, b: 2}}]\n"
        "  expect: {tools_include: [mcp.demo.add, fs.read]}\n"
        "- text: it is 42\n"
        "  expect: {last_contains: ['42'], last_ok: true}\n"
    )
    result = CliRunner().invoke(
        app, ["run", "-C", str(root), "--model", f"scripted:{script}", "What is 40 plus 2?"]
    )
    assert result.exit_code == 0, result.output
    assert "mcp.demo.add" in result.stdout and "completed" in result.stdout
