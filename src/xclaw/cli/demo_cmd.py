"""``xclaw demo``: a scripted end-to-end run through the real loop, policy and tools."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.markup import escape

from xclaw.cli.common import console, err_console, fail
from xclaw.cli.render import LiveView, print_summary
from xclaw.core.errors import ScriptMismatch, XclawError
from xclaw.core.events import Event, EventBus
from xclaw.redact import redact

_URL = re.compile(r"http://127\.0\.0\.1:\d+/?")


def demo(
    directory: Annotated[
        Path | None,
        typer.Option(
            "-C", "--project", help="An empty folder to build in (made if missing; default: new)."
        ),
    ] = None,
    protocol: Annotated[
        Literal["native", "xml"],
        typer.Option("--protocol", help="native (tool calls) or xml (the text protocol)."),
    ] = "native",
) -> None:
    """Build, serve, break and fix a small website with a scripted model (no key needed)."""
    from xclaw.coding.demo.run import prepare_dir, run_demo, script_path
    from xclaw.compose.settings import resolve_config
    from xclaw.models.text.model import xml_demo_model
    from xclaw.sandbox.resolve import session_sandbox

    try:
        root = prepare_dir(directory)
    except FileExistsError as err:
        err_console.print(
            f"[red]DEMO_DIR_NOT_EMPTY[/]: {err}. Pass -C/--project with an empty folder."
        )
        raise typer.Exit(2) from None
    console.print(
        "[bold]xclaw demo[/] — a [bold]scripted[/] run: the model's turns come from "
        f"{script_path().name}"
        + (" rendered as XML text and parsed back" if protocol == "xml" else "")
        + "; the loop, policy, tools, build and server are real.\n"
        f"Project folder: {root}\n"
    )
    served: list[str] = []
    bus = EventBus()
    bus.subscribe(LiveView(console))

    def watch(ev: Event) -> None:
        if ev.type == "tool.completed" and ev.payload.get("name") == "terminal.exec":
            stdout = str((ev.payload.get("data") or {}).get("stdout", ""))
            if ev.payload.get("ok") and "-> 200" in stdout:
                served.extend(_URL.findall(stdout))

    bus.subscribe(watch)
    chosen = xml_demo_model(script_path()) if protocol == "xml" else None
    try:
        choice = session_sandbox(resolve_config(root))
    except XclawError as err:
        fail(err)
    if choice.warning:
        console.print(
            f"[bold yellow]warning:[/] {choice.warning}. The demo approves its own scripted "
            "commands.\n"
        )
    else:
        console.print(f"[dim]sandbox: {choice.mode} — every command runs confined[/]\n")
    result, model = asyncio.run(run_demo(root, bus, chosen, choice.sandbox))
    print_summary(console, result)
    try:
        model.assert_complete()
    except ScriptMismatch as err:
        err_console.print(f"[red]{err.code}[/]: {escape(redact(err.message))}")
        raise typer.Exit(1) from None
    named = [u for u in served if u.rstrip("/") in result.reply]
    if not result.ok or not named:
        err_console.print("[red]DEMO_FAILED[/]: the run did not finish with a served URL.")
        raise typer.Exit(1)
    console.print(
        f"\n[green]The dev server answered HTTP 200 at {named[0]} during the run[/] "
        "(it was stopped at the end).\nThis was a scripted model. To drive the same agent with a "
        'real model: [bold]xclaw run -C PROJECT --model provider:model "your task"[/].'
    )
