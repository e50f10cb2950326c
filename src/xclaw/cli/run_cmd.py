"""``xclaw run``: the coding agent on a project."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.prompt import Confirm

from xclaw.cli.common import console, fail, install_interrupt, make_approver
from xclaw.cli.render import LiveView, print_summary
from xclaw.coding.agent import Agent
from xclaw.config import load_config
from xclaw.core.errors import XclawError
from xclaw.core.events import EventBus
from xclaw.core.state import RunControl, RunResult
from xclaw.models.resolve import resolve_model

EXIT_CODES = {"completed": 0, "failed": 1, "interrupted": 3}


def _ask_keep(processes: list[dict[str, Any]]) -> bool:
    if not sys.stdin.isatty():
        return False
    names = ", ".join(
        f"{p['processId']} {' '.join(p.get('detectedUrls') or [])}" for p in processes
    )
    return Confirm.ask(f"Keep running processes ({names})?", default=False, console=console)


async def run_agent(agent: Agent, task: str) -> RunResult:
    control = RunControl()
    remove = install_interrupt(control)
    try:
        return await agent.run(task, control=control)
    finally:
        remove()


def run(
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    directory: Annotated[Path, typer.Option("-C", "--directory", help="Project root.")] = Path("."),
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    approval: Annotated[str | None, typer.Option("--approval", help="ask | deny | allow")] = None,
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1)] = None,
) -> None:
    """Run the coding agent on a project."""
    try:
        cfg = load_config(directory)
        spec = model or cfg.model
        chosen_model = resolve_model(spec)
        limits = cfg.limits.to_limits()
        if max_turns is not None:
            limits = replace(limits, max_turns=max_turns)
        bus = EventBus()
        bus.subscribe(LiveView(console))
        agent = Agent(
            chosen_model,
            directory,
            approval=make_approver(approval or cfg.approval),
            limits=limits,
            bus=bus,
            keep_processes=_ask_keep,
        )
    except XclawError as err:
        fail(err)
    result = asyncio.run(run_agent(agent, task))
    print_summary(console, result)
    raise typer.Exit(EXIT_CODES[result.status])
