"""``xclaw protocol``: inspect the XML text protocol (parse a reply, print the opening block)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from xclaw.cli.common import fail
from xclaw.core.errors import ConfigError
from xclaw.core.tooling import ToolSpec
from xclaw.redact import redact_json

app = typer.Typer(
    help="Inspect the XML text protocol used by chat-text models.", no_args_is_help=True
)

_TOOL_SETS = ("coding", "none")


def _tools(name: str) -> list[ToolSpec]:
    if name not in _TOOL_SETS:
        fail(
            ConfigError(
                f"Unknown tool set {name!r}.",
                code="TOOLS_UNKNOWN",
                hint=f"Use one of: {', '.join(_TOOL_SETS)}.",
            )
        )
    from xclaw.coding.toolset import coding_registry  # imported on use: --help stays quick

    return [t.spec for t in coding_registry()] if name == "coding" else []


@app.command("parse")
def parse(
    file: Annotated[str, typer.Argument(help="A file holding one model reply, or - for stdin.")],
    tools_from: Annotated[
        Literal["coding", "none"],
        typer.Option("--tools-from", help="The tool set to validate against."),
    ] = "coding",
) -> None:
    """Parse one reply; print the turn or the structured error as JSON (exit 1 on an error)."""
    specs = _tools(tools_from)
    try:
        if file == "-":
            text = sys.stdin.read()
        else:
            # Bytes, not read_text: universal newlines would hide CRLF from the parser.
            text = Path(file).read_bytes().decode("utf-8", "replace")
    except OSError as err:
        fail(ConfigError(f"Cannot read {file}: {err.strerror}.", code="FILE_UNREADABLE"))
    from xclaw.models.text.protocol import ParsedTurn, parse_reply

    result = parse_reply(text, specs)
    printed = redact_json(result.to_dict())  # a reply may quote a file holding a key
    typer.echo(json.dumps(printed, indent=2, ensure_ascii=False, default=str))
    raise typer.Exit(0 if isinstance(result, ParsedTurn) else 1)


@app.command("prompt")
def prompt(
    tools_from: Annotated[
        Literal["coding", "none"], typer.Option("--tools-from", help="The tool set to describe.")
    ] = "coding",
) -> None:
    """Print the <agent_protocol> block that opens a text-protocol conversation."""
    from xclaw.models.text.protocol import render_protocol

    typer.echo(render_protocol(_tools(tools_from)))
