"""``xclaw models list`` and ``xclaw models probe``."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from xclaw.cli.common import console, fail
from xclaw.core.errors import XclawError
from xclaw.core.messages import Message, ToolCallPart, ToolResult, ToolResultPart
from xclaw.core.model import Model, ModelRequest, TextDelta, ToolCallEvent
from xclaw.core.tooling import Risk, ToolSpec
from xclaw.models.presets import list_presets

app = typer.Typer(help="Model providers: list presets, probe a model.", no_args_is_help=True)

PROBE_VALUE = "xclaw-probe-4729"
PROBE_TOOL = ToolSpec(
    "probe.echo",
    "Echo a value back. Call it exactly as instructed.",
    {
        "type": "object",
        "properties": {"value": {"type": "string", "description": "The value"}},
        "required": ["value"],
        "additionalProperties": False,
    },
    True,
    Risk.READ,
)


@app.command("list")
def list_models() -> None:
    """Provider presets: API, base URL, key variable (and whether it is set), window, prices."""
    table = Table("provider", "api", "base url", "key", "window", "$/M in", "$/M out")
    for p in list_presets():
        key = (
            "-"
            if not p.key_env
            else f"{p.key_env} ({'set' if os.environ.get(p.key_env) else 'unset'})"
        )
        table.add_row(
            p.name,
            p.api,
            p.base_url or "(--base-url)",
            key,
            str(p.capabilities.context_window),
            "" if p.price_input is None else f"{p.price_input:g}",
            "" if p.price_output is None else f"{p.price_output:g}",
        )
    console.print(table)
    console.print(
        "Use --model PROVIDER:MODEL, e.g. openai:gpt-4.1 or ollama:qwen2.5-coder; "
        "chain fallbacks with commas."
    )


async def _turn(model: Model, messages: list[Message]) -> tuple[str, list[ToolCallPart]]:
    text: list[str] = []
    calls: list[ToolCallPart] = []
    async for ev in model.respond(ModelRequest(messages, [PROBE_TOOL])):
        if isinstance(ev, TextDelta):
            text.append(ev.text)
        elif isinstance(ev, ToolCallEvent):
            calls.append(ev.call)
    return "".join(text), calls


async def probe_model(model: Model) -> dict[str, Any]:
    """One explicit tool round trip (seed 001's capability probe)."""
    ask = Message.user(f"Call the tool probe.echo with value {PROBE_VALUE!r}, then say 'done'.")
    report: dict[str, Any] = {
        "model": model.name,
        "strict_tool_call": False,
        "result_continuation": False,
    }
    try:
        text, calls = await _turn(model, [ask])
        report["first_reply"] = {
            "text": text[:200],
            "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in calls],
        }
        good = [
            c for c in calls if c.name == PROBE_TOOL.name and c.arguments == {"value": PROBE_VALUE}
        ]
        report["strict_tool_call"] = len(calls) == 1 and bool(good)
        if not good:
            return report
        call = good[0]
        result = ToolResult.success("echoed", value=PROBE_VALUE)
        history = [
            ask,
            Message("assistant", (call,)),
            Message("tool", (ToolResultPart(call.call_id, call.name, result),)),
        ]
        text2, calls2 = await _turn(model, history)
        report["second_reply"] = {"text": text2[:200], "tool_calls": len(calls2)}
        report["result_continuation"] = bool(text2.strip()) and not calls2
    except XclawError as err:
        report["error"] = {"code": err.code, "message": err.message}
    finally:
        await model.aclose()
    return report


@app.command("probe")
def probe(
    model: Annotated[str, typer.Argument(help="provider:model")],
    base_url: Annotated[str | None, typer.Option("--base-url")] = None,
    directory: Annotated[Path, typer.Option("-C", "--directory")] = Path("."),
) -> None:
    """Check that MODEL makes a strict tool call and continues after its result."""
    from xclaw.models.resolve import resolve_model

    try:
        chosen = resolve_model(model, base_url=base_url, project=directory)
    except XclawError as err:
        fail(err)
    report = asyncio.run(probe_model(chosen))
    typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
    raise typer.Exit(0 if report["strict_tool_call"] and report["result_continuation"] else 1)
