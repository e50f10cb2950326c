"""``xclaw mcp list|trust|serve``: MCP servers a run may use, and xclaw's tools as one."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.markup import escape
from rich.prompt import Confirm

from xclaw.cli.common import console, fail
from xclaw.cli.options import ProjectOption
from xclaw.core.errors import ConfigError, XclawError

app = typer.Typer(
    help="MCP servers: list them, trust a project's, serve xclaw's tools.", no_args_is_help=True
)

DirOption = ProjectOption  # -C/--project, as on every command


def _root(path: Path) -> Path:
    root = path.expanduser().resolve()
    if not root.is_dir():
        fail(
            ConfigError(
                f"The project directory {root} does not exist.",
                code="PROJECT_NOT_FOUND",
                hint="Pass an existing directory with -C/--project.",
            )
        )
    return root


@app.command("list")
def list_servers(
    directory: DirOption = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Servers from your config and the project's .mcp.json, with their tools.

    Resources and prompts are listed too; usable servers are started to ask them, then
    stopped."""
    from xclaw.compose.settings import resolve_config
    from xclaw.mcp.runtime import describe_servers

    root = _root(directory)
    try:
        rows = asyncio.run(describe_servers(root, dict(resolve_config(root).mcp)))
    except XclawError as err:
        fail(err)
    if as_json:
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    if not rows:
        console.print("No MCP servers: add mcp.servers to ~/.config/xclaw/xclaw.yaml or .mcp.json.")
    for row in rows:
        _print_server(row)


def _print_server(row: dict[str, Any]) -> None:
    # Names and descriptions come from servers: printed as text, never as rich markup.
    head = f"[bold]{escape(row['name'])}[/bold] ({row['source']}, {escape(row['transport'])})"
    if not row["usable"]:
        console.print(f"{head}: not used — {escape(row['why'])}")
        return
    if "error" in row:
        console.print(f"{head}: [red]{escape(row['error'])}[/red]")
        return
    console.print(head)
    for t in row["tools"]:
        about = t["description"].split("] ", 1)[-1][:70]
        console.print(f"  tool      {escape(t['name'])}  ({t['risk']})  {escape(about)}")
    for r in row["resources"]:
        console.print(f"  resource  {escape(r['uri'])}  {escape(r['description'] or r['name'])}")
    for p in row["prompts"]:
        args = ", ".join(p["arguments"])
        console.print(
            f"  prompt    {escape(p['name'])}({escape(args)})  {escape(p['description'] or '')}"
        )
    for w in row["warnings"]:
        console.print(f"  [yellow]warning[/yellow] {escape(w)}")


@app.command("trust")
def trust_server(
    name: Annotated[str, typer.Argument(help="A server of the project's .mcp.json.")],
    directory: DirOption = Path("."),
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask to confirm.")] = False,
    revoke: Annotated[bool, typer.Option("--revoke", help="Withdraw the trust.")] = False,
) -> None:
    """Allow a project's server (from its .mcp.json) to start.

    Its exact definition is remembered in your data dir; any later change to it needs a new
    trust."""
    from xclaw.mcp import trust
    from xclaw.mcp.settings import project_servers

    root = _root(directory)
    if revoke:
        done = trust.revoke(root, name)
        console.print(f"{name}: trust withdrawn." if done else f"{name} was not trusted.")
        return
    try:
        entry = project_servers(root).get(name)
    except XclawError as err:
        fail(err)
    if entry is None:
        fail(
            ConfigError(
                f"{root / '.mcp.json'} defines no server {name!r}.",
                code="MCP_SERVER_NOT_FOUND",
                hint="See `xclaw mcp list`.",
            )
        )
    if entry.config is None:
        fail(ConfigError(entry.error, code="MCP_CONFIG_INVALID", hint="Fix .mcp.json first."))
    console.print(f"{name} in {root / '.mcp.json'} would run:")
    console.print_json(json.dumps(entry.raw))
    if not yes:
        if not sys.stdin.isatty():
            fail(
                ConfigError(
                    "Trusting a server needs a confirmation.",
                    code="CONFIRMATION_REQUIRED",
                    hint="Run it in a terminal, or pass --yes after reading the definition.",
                )
            )
        if not Confirm.ask("Trust this server for this project?", default=False, console=console):
            raise typer.Exit(1)
    trust.trust(root, name, entry.fingerprint)
    console.print(f"{name}: trusted for {root}.")


@app.command("serve")
def serve(
    directory: DirOption = Path("."),
    approval: Annotated[
        Literal["deny", "allow"],
        typer.Option(
            "--approval",
            help="deny (default): calls the policy would ask about are refused, since no human "
            "answers on MCP stdio; allow: they run.",
        ),
    ] = "deny",
    tool_names: Annotated[
        Literal["underscore", "dotted"] | None,
        typer.Option(
            "--tool-names",
            help="underscore: fs_read (the default, accepted by every client); dotted: fs.read. "
            "Default: mcp.serve.tool_names in your xclaw.yaml.",
        ),
    ] = None,
) -> None:
    """Serve xclaw's coding tools over MCP on stdio, the policy enforced by xclaw."""
    from xclaw.compose.coding import coding_tools
    from xclaw.compose.settings import resolve_config
    from xclaw.mcp.serve import serve_stdio
    from xclaw.mcp.settings import serve_settings
    from xclaw.sandbox.resolve import session_sandbox

    root = _root(directory)
    try:
        config = resolve_config(root)  # once: the sandbox, the tools and their names
        names = tool_names or serve_settings(config.mcp).tool_names
        choice = session_sandbox(config)
    except XclawError as err:
        fail(err)
    if choice.warning:  # stderr: stdout is the MCP channel
        typer.echo(f"warning: {choice.warning}", err=True)
    try:
        asyncio.run(
            serve_stdio(
                root,
                "allow" if approval == "allow" else "deny",
                choice.sandbox,
                registry=coding_tools(config),
                tool_names="dotted" if names == "dotted" else "underscore",
            )
        )
    except XclawError as err:  # before serving: two tools on one name
        fail(err)
