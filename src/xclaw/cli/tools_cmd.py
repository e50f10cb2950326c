"""``xclaw tools list`` and ``xclaw tools call``: one call through validation and policy."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.table import Table

from xclaw.cli.common import console, fail, make_approver
from xclaw.cli.options import ApprovalOption, ProjectOption, SandboxOption
from xclaw.core.dispatch import run_tool_calls
from xclaw.core.errors import ConfigError, XclawError
from xclaw.core.events import EventBus
from xclaw.core.limits import Limits
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.state import RunState
from xclaw.core.tooling import Approver, Policy, Toolbox
from xclaw.dirs import run_output_dir
from xclaw.redact import redact_json

if TYPE_CHECKING:
    from xclaw.config import XclawConfig

app = typer.Typer(help="Inspect and call tools directly.", no_args_is_help=True)


@dataclass(slots=True)
class _CallDeps:
    toolbox: Toolbox
    policy: Policy
    approver: Approver
    bus: EventBus = field(default_factory=EventBus)
    limits: Limits = field(default_factory=Limits)


@app.command("list")
def list_tools(
    as_json: Annotated[bool, typer.Option("--json", help="Print the schemas as JSON.")] = False,
) -> None:
    """List the tools, their risk and whether they are read-only."""
    from xclaw.coding.toolset import coding_registry

    registry = coding_registry()
    if as_json:
        specs = [
            {
                "name": t.name,
                "description": t.description,
                "risk": str(t.risk),
                "read_only": t.read_only,
                "parameters": t.spec.parameters,
            }
            for t in registry
        ]
        typer.echo(json.dumps(specs, indent=2))
        return
    table = Table("tool", "risk", "read-only", "description")
    for t in registry:
        table.add_row(t.name, str(t.risk), "yes" if t.read_only else "no", t.description)
    console.print(table)


async def call_once(
    name: str,
    arguments: object,
    root: Path,
    approver: Approver,
    sandbox: str | None = None,
    *,
    config: XclawConfig,
) -> ToolResult:
    """One call of ``name`` in ``root``, with the sandbox and tools of the resolved ``config``."""
    from xclaw.compose.coding import coding_tools
    from xclaw.policy.engine import PolicyEngine
    from xclaw.sandbox.resolve import session_sandbox
    from xclaw.tools.base import Workspace

    choice = session_sandbox(config, sandbox)
    workspace = Workspace(root, output_dir=run_output_dir("tools-call"), sandbox=choice.sandbox)
    if choice.warning:  # stderr: stdout carries the result as JSON
        typer.echo(f"warning: {choice.warning}", err=True)
    deps = _CallDeps(coding_tools(config).bind(workspace), PolicyEngine(workspace), approver)
    state = RunState("tools-call", f"call {name}", [])
    # Non-object JSON goes through as-is: prepare() answers it with TOOL_ARGUMENTS_INVALID.
    args = cast(dict[str, Any], arguments)
    try:
        records = await run_tool_calls(state, deps, [ToolCallPart("call_1", name, args)])
    finally:
        await workspace.close()
    return records[0].result


@app.command("call")
def call(
    name: Annotated[str, typer.Argument(help="Tool name, e.g. fs.read")],
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    directory: ProjectOption = Path("."),
    approval: ApprovalOption = None,
    sandbox: SandboxOption = None,
) -> None:
    """Run one tool call through validation, policy and approval; print the ToolResult."""
    from xclaw.compose.settings import resolve_config

    try:
        try:
            arguments = json.loads(args)
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"--args is not valid JSON: {err.msg}",
                code="TOOL_ARGUMENTS_INVALID",
                hint="Pass a JSON object.",
            ) from None
        root = directory.resolve()
        config = resolve_config(root)  # once: the sandbox and the tools
        result = asyncio.run(
            call_once(name, arguments, root, make_approver(approval), sandbox, config=config)
        )
    except XclawError as err:
        fail(err)
    # Printed, so redacted: a command's output (``cat .env``) must not put keys on the screen.
    # The result itself stays whole; only this copy of it is masked.
    printed = redact_json(json.loads(json.dumps(result.to_dict(), default=str)))
    typer.echo(json.dumps(printed, indent=2, ensure_ascii=False))
    raise typer.Exit(0 if result.ok else 1)
