"""Which servers a run may start: the user's always, a project's only once trusted."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from xclaw.cli.mcp_cmd import app
from xclaw.config import load_config
from xclaw.core.errors import ConfigError
from xclaw.mcp import trust
from xclaw.mcp.runtime import mcp_tools, server_statuses
from xclaw.mcp.settings import expand, parse_server, project_servers
from xclaw.models.scripted import ScriptedModel


def write_project(root: Path, servers: dict[str, Any]) -> None:
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


def touching(marker: Path) -> dict[str, Any]:
    """A 'server' whose start would leave a marker file behind."""
    return {"command": "sh", "args": ["-c", f"touch {marker}"], "startupTimeout": 5}


def usable(root: Path, section: dict[str, Any] | None = None) -> dict[str, bool]:
    return {s.entry.name: s.usable for s in server_statuses(root, section or {})}


def test_a_project_server_needs_the_users_trust_of_its_exact_definition(root: Path) -> None:
    write_project(root, {"proj": touching(root / "marker")})
    (status,) = server_statuses(root, {})
    assert not status.usable and "xclaw mcp trust proj" in status.why
    trust.trust(root, "proj", project_servers(root)["proj"].fingerprint)
    assert usable(root) == {"proj": True}
    # the project (or a model writing .mcp.json) changes the command: trust is gone
    write_project(root, {"proj": {**touching(root / "marker"), "args": ["-c", "echo other"]}})
    assert usable(root) == {"proj": False}
    assert trust.revoke(root, "proj") and not trust.revoke(root, "proj")


def test_the_user_config_wins_over_a_project_server_of_the_same_name(root: Path) -> None:
    write_project(root, {"demo": touching(root / "marker")})
    trust.trust(root, "demo", project_servers(root)["demo"].fingerprint)
    section = {"servers": {"demo": {"command": "true"}}}
    statuses = server_statuses(root, section)
    assert [(s.entry.source, s.usable) for s in statuses] == [("user", True), ("project", False)]


def sees_marker(marker: Path) -> bool:
    return marker.exists()


async def test_an_untrusted_project_server_never_starts(root: Path) -> None:
    marker = root / "marker"
    write_project(root, {"proj": touching(marker)})
    warnings: list[str] = []
    async with mcp_tools(root, {}, warn=warnings.append) as tools:
        assert tools == []
    assert not sees_marker(marker)
    assert len(warnings) == 1 and "not trusted" in warnings[0]


def test_a_project_xclaw_yaml_may_not_define_mcp_servers(root: Path) -> None:
    (root / "xclaw.yaml").write_text("mcp:\n  servers:\n    x: {command: sh}\n")
    with pytest.raises(ConfigError) as err:
        load_config(root)
    assert err.value.code == "CONFIG_UNSAFE"


def test_definitions_follow_claude_code_and_are_checked() -> None:
    assert parse_server("a", {"command": "npx", "args": ["-y", "x"]}, "t").type == "stdio"
    http = parse_server("b", {"url": "http://127.0.0.1:1/mcp", "headers": {"X": "1"}}, "t")
    assert http.type == "http"
    for bad in ({"type": "sse", "url": "http://x"}, {"command": ""}, {"command": "x", "foo": 1}):
        with pytest.raises(ConfigError) as err:
            parse_server("c", bad, "t")
        assert err.value.code == "MCP_CONFIG_INVALID"
    with pytest.raises(ConfigError):
        parse_server("bad.name", {"command": "x"}, "t")
    assert expand("${HOME_X:-d}/${Y}", {"Y": "y"}) == "d/y"
    with pytest.raises(ConfigError, match="UNSET_VAR"):
        expand("${UNSET_VAR}", {})


def test_trust_command_shows_the_definition_and_needs_confirmation(root: Path) -> None:
    write_project(root, {"proj": touching(root / "marker")})
    runner = CliRunner()
    refused = runner.invoke(app, ["trust", "proj", "-C", str(root)])
    assert refused.exit_code == 2 and "CONFIRMATION_REQUIRED" in refused.output
    assert usable(root) == {"proj": False}
    done = runner.invoke(app, ["trust", "proj", "-C", str(root), "--yes"])
    assert done.exit_code == 0 and "touch" in done.output
    assert usable(root) == {"proj": True}
    missing = runner.invoke(app, ["trust", "nope", "-C", str(root), "--yes"])
    assert missing.exit_code == 2 and "MCP_SERVER_NOT_FOUND" in missing.output


async def test_the_published_time_server_answers_through_the_client(root: Path) -> None:
    """mcp-server-time from PyPI (a dev dependency), its own read-only annotations."""
    from xclaw.coding.agent import Agent

    section = {
        "servers": {
            "time": {
                "command": sys.executable,
                "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
                "timeout": 20,
            }
        }
    }
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {
                        "id": "t1",
                        "name": "mcp.time.convert_time",
                        "arguments": {
                            "source_timezone": "UTC",
                            "time": "12:00",
                            "target_timezone": "Asia/Tokyo",
                        },
                    }
                ]
            },
            {"text": "21:00 in Tokyo", "expect": {"last_ok": True}},
        ]
    )
    async with mcp_tools(root, section) as tools:
        assert {t.name: str(t.risk) for t in tools} == {
            "mcp.time.get_current_time": "read",
            "mcp.time.convert_time": "read",
        }
        result = await Agent(model, root, tools, evidence_gate_enabled=False).run("convert")
    (rec,) = result.tool_calls
    target = rec.result.data["structured"]["target"]
    assert rec.result.ok and target["timezone"] == "Asia/Tokyo"
    assert target["datetime"].endswith("T21:00:00+09:00")


def test_list_shows_an_untrusted_server_without_starting_it(root: Path) -> None:
    marker = root / "marker"
    write_project(root, {"proj": touching(marker)})
    result = CliRunner().invoke(app, ["list", "-C", str(root), "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert (row["name"], row["source"], row["usable"]) == ("proj", "project", False)
    assert "xclaw mcp trust proj" in row["why"] and not sees_marker(marker)
    plain = CliRunner().invoke(app, ["list", "-C", str(root)])
    assert "proj (project, stdio): not used" in plain.stdout


def test_one_bad_definition_never_hides_the_others(root: Path) -> None:
    write_project(root, {"old": {"type": "sse", "url": "http://x/sse"}, "ok": touching(root / "m")})
    trust.trust(root, "ok", project_servers(root)["ok"].fingerprint)
    section = {"servers": {"mine": {"command": "true", "unknown": 1}}}
    statuses = {s.entry.name: s for s in server_statuses(root, section)}
    assert {n: s.usable for n, s in statuses.items()} == {"mine": False, "old": False, "ok": True}
    assert "SSE" in statuses["old"].why and "unknown" in statuses["mine"].why
    assert statuses["old"].entry.transport == "sse"
