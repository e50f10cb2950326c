"""``xclaw models list``, ``probe``; ``pull`` and ``list-local`` live in local_models_cmd."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from xclaw.cli.common import ProtocolOption, console, fail
from xclaw.cli.local_models_cmd import list_local, pull
from xclaw.cli.options import ProjectOption
from xclaw.core.errors import XclawError
from xclaw.core.messages import Message, ToolCallPart, ToolResult, ToolResultPart
from xclaw.core.model import Model, ModelRequest, TextDelta, ToolCallEvent
from xclaw.models.presets import list_presets
from xclaw.models.probe import PROBE_TOOL, PROBE_VALUE, Detected, ProbeCache

if TYPE_CHECKING:
    from xclaw.config import ModelSettings

app = typer.Typer(
    help="Model providers: list presets, probe a model, pull local models.", no_args_is_help=True
)
app.command("pull")(pull)
app.command("list-local")(list_local)


@app.command("list")
def list_models(
    as_json: Annotated[bool, typer.Option("--json", help="Every field, as JSON.")] = False,
) -> None:
    """Provider presets: key variable (and whether it is set), window, prices, API, URL.

    Yours from ~/.config/xclaw/models.yaml are listed with the packaged ones. The API and
    base URL columns show on a terminal of 120 columns or more (or use --json)."""
    try:
        presets = list_presets()
    except XclawError as err:  # a mistake in your models.yaml
        fail(err)
    if as_json:
        from xclaw.redact import redact_json  # a header of your models.yaml may hold a key

        dumped = redact_json([p.model_dump(mode="json") for p in presets])
        typer.echo(json.dumps(dumped, indent=2))
        return
    # The provider and the key variable are what you type: never cut, whatever the width.
    wide = console.width >= 120
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("provider", no_wrap=True)
    table.add_column("key variable", no_wrap=True)
    table.add_column("set", no_wrap=True)
    table.add_column("window", justify="right", no_wrap=True)
    table.add_column("$/M in", justify="right", no_wrap=True)
    table.add_column("$/M out", justify="right", no_wrap=True)
    if wide:
        table.add_column("api", no_wrap=True)
        table.add_column("base url", overflow="fold")
    for p in presets:
        row = [
            p.name,
            p.key_env or "-",
            "" if not p.key_env else ("yes" if os.environ.get(p.key_env) else "no"),
            str(p.capabilities.context_window),
            "" if p.price_input is None else f"{p.price_input:g}",
            "" if p.price_output is None else f"{p.price_output:g}",
        ]
        if wide:
            row += [p.api, p.base_url or "(--base-url)"]
        table.add_row(*row)
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
    directory: ProjectOption = Path("."),
    protocol: ProtocolOption = None,
) -> None:
    """Check that MODEL makes a tool call and goes on after its result.

    The check runs on the model's tool channel; when that channel carries no call, also
    through the XML protocol. The answer is what `protocol: auto` uses: it is cached for the
    model (shown under "protocol")."""
    from xclaw.compose.settings import resolve_config
    from xclaw.models.resolve import check_protocol, resolve_model

    try:
        check_protocol(protocol)
        settings = resolve_config(directory).models  # once: both probes and the plan
        chosen = resolve_model(
            model, base_url=base_url, project=directory, protocol="native", model_settings=settings
        )
    except XclawError as err:
        fail(err)
    report = asyncio.run(_probe(chosen, model, base_url, directory, protocol, settings))
    typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
    usable = [report, report.get("xml") or {}]
    ok = any(r.get("strict_tool_call") and r.get("result_continuation") for r in usable)
    raise typer.Exit(0 if ok else 1)


async def _probe(
    chosen: Model,
    spec: str,
    base_url: str | None,
    directory: Path,
    protocol: str | None,
    settings: Mapping[str, ModelSettings],
) -> dict[str, Any]:
    """The native round trip on the adapter itself (no repair), the protocol it implies,
    and, when that is xml, the round trip through the XML protocol."""
    from xclaw.models.info import primary
    from xclaw.models.resolve import check_protocol, resolve_model
    from xclaw.models.setup import plan_for

    adapter = primary(chosen)
    plan = plan_for(adapter, spec, settings, check_protocol(protocol))
    report = await probe_model(adapter)
    if plan is None or "error" in report:
        return report
    native = bool(report["first_reply"]["tool_calls"])
    cache = ProbeCache()
    previous = cache.get(plan.key)
    detected: Detected = "native" if native else "xml"
    cache.put(plan.key, detected, model=chosen.name)
    report["protocol"] = {
        "configured": plan.protocol,
        "detected": detected,
        "previous": previous,
        "cache_key": str(plan.key),
        "cache_file": str(cache.path),
    }
    if detected == "xml":
        xml = resolve_model(
            spec, base_url=base_url, project=directory, protocol="xml", model_settings=settings
        )
        report["xml"] = await probe_model(xml)
    return report
