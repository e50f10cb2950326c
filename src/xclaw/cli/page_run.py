"""``xclaw page run URL "task"``: the WebAgent on a live page, with the live view.

The model is resolved as ``xclaw run`` resolves it (``--model``, XCLAW_MODEL, ``model:`` in
xclaw.yaml); with none configured the command stops with MODEL_NOT_CONFIGURED.
"""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from xclaw.cli.common import console, fail, install_interrupt, make_approver
from xclaw.cli.render import LiveView
from xclaw.compose.settings import resolve_config
from xclaw.core.errors import XclawError
from xclaw.core.events import EventBus
from xclaw.core.state import RunControl
from xclaw.redact import redact

if TYPE_CHECKING:
    from xclaw.core.model import Model
    from xclaw.core.tooling import Approver
    from xclaw.page.agent import AgentLoopResult
    from xclaw.page.callbacks import WebAgentCallbacks
    from xclaw.page.metrics import AgentLoopMetrics

EXIT_CODES = {"completed": 0, "failed": 1, "interrupted": 3}
_VIEWPORT = {"width": 1280, "height": 800}


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


async def run_page_task(
    model: Model,
    url: str,
    task: str,
    *,
    headless: bool,
    browser: str | None,
    max_rounds: int,
    approver: Approver,
    allow_hosts: Sequence[str] = (),
) -> AgentLoopResult:
    """Open ``url`` in a fresh browser context (as ``xclaw page snapshot`` does) and chat."""
    from xclaw.browser import BrowserOptions
    from xclaw.browser.session import BrowserPool
    from xclaw.page.agent import WebAgent
    from xclaw.page.driver import PageDriver
    from xclaw.tools.base import Workspace
    from xclaw.tools.browser_guard import NavigationGuard, NavigationRules

    bus = EventBus()
    bus.subscribe(LiveView(console))
    extra = tuple(shlex.split(os.environ.get("XCLAW_BROWSER_ARGS", "")))
    pool = BrowserPool(BrowserOptions(executable=browser, headless=headless or None, args=extra))
    try:
        context = await pool.new_context(viewport=_VIEWPORT)
        # Every later request is judged by the browsing policy; the address typed here is
        # the user's own choice, so the first goto is approved by the driver.
        rules = NavigationRules(allow_hosts=allow_hosts)
        rules.attach(Workspace(Path.cwd()))
        driver = PageDriver(await context.new_page(), guard=NavigationGuard(rules))
        await driver.install()
        await driver.navigate("goto", url=url)
        agent = WebAgent(
            model,
            driver,
            max_rounds=max_rounds,
            callbacks=live_callbacks(console),
            approval=approver,
            bus=bus,
        )
        control = RunControl()
        remove = install_interrupt(control)
        try:
            return await agent.chat(task, control=control)
        finally:
            remove()
    finally:
        await pool.close()
        await model.aclose()


def run(
    url: Annotated[str, typer.Argument(help="The page: a URL or an HTML file.")],
    task: Annotated[str, typer.Argument(help="What to do on it, e.g. 'click A -> fill B'.")],
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    headless: Annotated[bool, typer.Option("--headless", help="No browser window.")] = False,
    browser: Annotated[
        str | None, typer.Option("--browser", help="Chromium/Chrome executable to use.")
    ] = None,
    max_rounds: Annotated[int, typer.Option("--max-rounds", min=1)] = 40,
    approval: Annotated[
        str | None, typer.Option("--approval", help="ask | deny | allow, for risky tools")
    ] = None,
) -> None:
    """Run the page agent on a live page (seed 002's WebAgent), showing each round."""
    from xclaw.cli.page_cmd import target_url
    from xclaw.models.resolve import resolve_model

    try:
        cfg = resolve_config(Path.cwd())  # once: the model and the browsing policy follow it
        resolved = resolve_model(model or cfg.model, project=Path.cwd(), model_settings=cfg.models)
        target = target_url(url)
        approver = make_approver(approval or cfg.approval)
        result = asyncio.run(
            run_page_task(
                resolved,
                target,
                task,
                headless=headless,
                browser=browser,
                max_rounds=max_rounds,
                approver=approver,
                allow_hosts=cfg.browsing.allow_hosts,
            )
        )
    except XclawError as err:
        fail(err)
    print_page_summary(console, result)
    raise typer.Exit(EXIT_CODES[result.status])
