"""``xclaw run`` and ``xclaw resume``: the coding agent on a project, as durable sessions."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.prompt import Confirm

from xclaw.cli.common import console, fail, install_interrupt, make_approver, sandbox_factory
from xclaw.cli.render import LiveView, print_summary
from xclaw.cli.web import attach_web_relay, browser_flags, saved_web_base_url
from xclaw.config import load_config
from xclaw.core.errors import ConfigError, XclawError
from xclaw.core.events import EventBus
from xclaw.core.resume import InterruptedChoice
from xclaw.core.state import RunControl, RunResult

if TYPE_CHECKING:
    from xclaw.coding.agent import Agent
    from xclaw.store.base import SessionRecord

EXIT_CODES = {"completed": 0, "failed": 1, "interrupted": 3}


def _ask_keep(processes: list[dict[str, Any]]) -> bool:
    if not sys.stdin.isatty():
        return False
    names = ", ".join(
        f"{p['processId']} {' '.join(p.get('detectedUrls') or [])}" for p in processes
    )
    return Confirm.ask(f"Keep running processes ({names})?", default=False, console=console)


async def _drive(agent: Agent, start: Callable[[RunControl], Awaitable[RunResult]]) -> RunResult:
    control = RunControl()
    remove = install_interrupt(control)
    try:
        return await start(control)
    finally:
        remove()
        await agent.model.aclose()


HeadlessOption = Annotated[
    bool, typer.Option("--headless", help="Run the model's browser without a window.")
]
BrowserOption = Annotated[
    str | None, typer.Option("--browser", help="Chromium/Chrome to use for chatgpt-web.")
]


def _build_agent(
    directory: Path,
    spec: str | None,
    approval: str | None,
    max_turns: int | None,
    base_url: str | None = None,
    sandbox: str | None = None,
) -> Agent:
    from xclaw.coding.agent import Agent  # heavy: imported when a command runs, not for --help
    from xclaw.models.resolve import resolve_model
    from xclaw.store.sqlite import open_store

    cfg = load_config(directory)
    chosen = spec or cfg.model
    model = resolve_model(chosen, base_url=base_url, project=directory)
    limits = cfg.limits.to_limits()
    if max_turns is not None:
        limits = replace(limits, max_turns=max_turns)
    bus = EventBus()
    bus.subscribe(LiveView(console))
    attach_web_relay(model, bus)
    factory = sandbox_factory(sandbox, cfg)
    return Agent(
        model,
        directory,
        approval=make_approver(approval or cfg.approval),
        limits=limits,
        bus=bus,
        keep_processes=_ask_keep,
        store=open_store(),
        model_spec=chosen,
        sandbox=factory,
    )


def _finish(result: RunResult, agent: Agent) -> None:
    print_summary(console, result, agent.model)
    if result.status != "completed":
        console.print(f"[dim]continue with: xclaw resume {result.session_id}[/]")
    raise typer.Exit(EXIT_CODES[result.status])


def run(
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    directory: Annotated[Path, typer.Option("-C", "--directory", help="Project root.")] = Path("."),
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    approval: Annotated[str | None, typer.Option("--approval", help="ask | deny | allow")] = None,
    sandbox: Annotated[
        str | None, typer.Option("--sandbox", help="auto | bwrap | host | full (default auto)")
    ] = None,
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1)] = None,
    headless: HeadlessOption = False,
    browser: BrowserOption = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="Endpoint of an OpenAI- or Anthropic-compatible gateway."),
    ] = None,
) -> None:
    """Run the coding agent on a project (recorded as a session you can resume)."""
    try:
        browser_flags(headless, browser)
        agent = _build_agent(directory, model, approval, max_turns, base_url, sandbox)
    except XclawError as err:
        fail(err)
    _finish(asyncio.run(_drive(agent, lambda control: agent.run(task, control=control))), agent)


def _session_to_resume(session_id: str | None, directory: Path) -> SessionRecord:
    from xclaw.store.sqlite import open_store

    store = open_store()
    if session_id is not None:
        session = store.get_session(session_id)
        if session is None:
            raise ConfigError(
                f"There is no session {session_id!r}.",
                code="SESSION_NOT_FOUND",
                hint="List sessions with `xclaw sessions`.",
            )
        return session
    root = str(directory.resolve())
    for candidate in store.list_sessions(root=root, limit=20):
        if candidate.state != "success":
            return candidate
    raise ConfigError(
        f"No unfinished session for {root}.",
        code="SESSION_NOT_FOUND",
        hint="Pass a session id (see `xclaw sessions`) or -C the project directory.",
    )


def resume(
    session_id: Annotated[
        str | None,
        typer.Argument(
            help="Session id (see `xclaw sessions`); default: the latest unfinished "
            "session of the -C directory."
        ),
    ] = None,
    directory: Annotated[Path, typer.Option("-C", "--directory", help="Project root.")] = Path("."),
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    approval: Annotated[str | None, typer.Option("--approval", help="ask | deny | allow")] = None,
    retry_interrupted: Annotated[
        bool,
        typer.Option("--retry-interrupted", help="Run a call that was interrupted mid-way again."),
    ] = False,
    skip_interrupted: Annotated[
        bool, typer.Option("--skip-interrupted", help="Do not run an interrupted call again.")
    ] = False,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh", help="Continue in a fresh model context from the latest checkpoint."
        ),
    ] = False,
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1)] = None,
    base_url: Annotated[str | None, typer.Option("--base-url")] = None,
    sandbox: Annotated[
        str | None, typer.Option("--sandbox", help="auto | bwrap | host | full")
    ] = None,
    headless: HeadlessOption = False,
    browser: BrowserOption = None,
) -> None:
    """Continue a session after a crash, a stop or a pause, without redoing side effects."""
    try:
        if retry_interrupted and skip_interrupted:
            raise ConfigError("Choose one of --retry-interrupted and --skip-interrupted.")
        session = _session_to_resume(session_id, directory)
        spec = model or session.meta.get("model_spec")
        browser_flags(headless, browser)
        base_url = base_url or saved_web_base_url(spec, session.meta)
        agent = _build_agent(Path(session.root), spec, approval, max_turns, base_url, sandbox)
    except XclawError as err:
        fail(err)
    choice: InterruptedChoice | None = (
        "retry"
        if retry_interrupted
        else "skip"
        if skip_interrupted
        else "ask"
        if sys.stdin.isatty() and approval in (None, "ask")
        else None
    )
    try:
        result = asyncio.run(
            _drive(
                agent,
                lambda control: agent.resume(
                    session.id, control=control, interrupted=choice, fresh_context=fresh
                ),
            )
        )
    except XclawError as err:  # the session cannot be resumed (finished, other root, ...)
        fail(err)
    _finish(result, agent)
