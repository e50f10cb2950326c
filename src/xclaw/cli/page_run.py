"""``xclaw page run URL "task"``: the WebAgent on a live page, with the live view.

The model is resolved as ``xclaw run`` resolves it (``--model``, XCLAW_MODEL, ``model:`` in
xclaw.yaml); with none configured the command stops with MODEL_NOT_CONFIGURED. The agent is
assembled by ``xclaw.compose.page``; this module parses the flags and renders.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from xclaw.cli.common import console, fail, install_interrupt, make_approver
from xclaw.cli.options import ApprovalOption
from xclaw.cli.render import LiveView
from xclaw.compose.page import DEFAULT_MAX_ROUNDS
from xclaw.compose.settings import Overrides, resolve_config
from xclaw.core.errors import XclawError
from xclaw.core.events import EventBus
from xclaw.core.state import RunControl
from xclaw.redact import redact

if TYPE_CHECKING:
    from xclaw.compose.page import PageRuntime
    from xclaw.page.agent import AgentLoopResult
    from xclaw.page.callbacks import WebAgentCallbacks
    from xclaw.page.metrics import AgentLoopMetrics

EXIT_CODES = {"completed": 0, "failed": 1, "interrupted": 3}


def live_callbacks(out: Console) -> WebAgentCallbacks:
    """Round headers, the snapshot size and recoveries; tool lines come from ``LiveView``."""
    from xclaw.page.callbacks import WebAgentCallbacks

    def recovery(url: str | None) -> None:
        what = f"page moved to {url}" if url else "element not found"
        out.print(f"  [yellow]↻ {escape(redact(what))}: refreshing the snapshot[/]")

    return WebAgentCallbacks(
        on_round=lambda r: out.rule(f"[bold]round {r + 1}[/]", align="left", style="dim"),
        on_snapshot=lambda s: out.print(f"[dim]first snapshot: {len(s)} chars[/]"),
        on_before_recovery_snapshot=recovery,
    )


def print_page_summary(out: Console, result: AgentLoopResult) -> None:
    colour = {"completed": "green", "interrupted": "yellow", "failed": "red"}[result.status]
    out.rule(f"[{colour}]{result.status}[/]")
    if result.reply:
        out.print(escape(redact(result.reply)))
    if result.reason:
        style = "dim" if result.ok else colour
        out.print(f"[{style}]reason: {escape(redact(result.reason))}[/]")
    if result.remaining:
        out.print(f"[yellow]remaining:[/] {escape(redact(result.remaining))}")
    out.print(f"[dim]{metrics_line(result.metrics)}[/]")


def metrics_line(m: AgentLoopMetrics) -> str:
    return (
        f"{m.round_count} rounds · {m.total_tool_calls} tool calls ({m.failed_tool_calls} failed, "
        f"success {m.tool_success_rate:.0%}) · {m.recovery_count} recoveries · "
        f"{m.redundant_intercept_count} intercepted · {m.snapshot_read_count} snapshots "
        f"(avg {m.avg_snapshot_size}, max {m.max_snapshot_size} chars) · "
        f"tokens in {m.input_tokens} out {m.output_tokens}"
    )


def run(
    url: Annotated[str, typer.Argument(help="The page: a URL or an HTML file.")],
    task: Annotated[str, typer.Argument(help="What to do on it, e.g. 'click A -> fill B'.")],
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    headless: Annotated[bool, typer.Option("--headless", help="No browser window.")] = False,
    browser: Annotated[
        str | None, typer.Option("--browser", help="Chromium/Chrome executable to use.")
    ] = None,
    max_rounds: Annotated[int, typer.Option("--max-rounds", min=1)] = DEFAULT_MAX_ROUNDS,
    approval: ApprovalOption = None,
) -> None:
    """Run the page agent on a live page (seed 002's WebAgent), showing each round."""
    from xclaw.cli.page_cmd import target_url
    from xclaw.compose.page import PageFlags, build_page

    try:
        target = target_url(url)
        cfg = resolve_config(Path.cwd())  # once: the model and the browsing policy follow it
        runtime = build_page(
            cfg,
            Path.cwd(),
            Overrides(model=model, approval=approval),
            PageFlags(headless=headless, browser=browser, max_rounds=max_rounds),
            approver_for=make_approver,
        )
        result = asyncio.run(_drive(runtime, target, task))
    except XclawError as err:
        fail(err)
    print_page_summary(console, result)
    raise typer.Exit(EXIT_CODES[result.status])


async def _drive(runtime: PageRuntime, url: str, task: str) -> AgentLoopResult:
    """The run with the live view, stopped by Ctrl-C like ``xclaw run``."""
    bus = EventBus()
    bus.subscribe(LiveView(console))
    control = RunControl()
    remove = install_interrupt(control)
    try:
        return await runtime.run(
            url, task, bus=bus, callbacks=live_callbacks(console), control=control
        )
    finally:
        remove()
