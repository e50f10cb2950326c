"""``xclaw run`` and ``xclaw resume``: the coding agent on a project, as durable sessions.

``--browser`` adds the browser tools (``browser.navigate``, ``browser.content``, ...) on one
headless Chromium context of the session's own, closed when the run ends; ``--browser-headed``
shows its window. ``--browser-path`` picks the Chromium (also for the chatgpt-web model).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.prompt import Confirm

from xclaw.cli.common import (
    ProtocolOption,
    console,
    err_console,
    fail,
    install_interrupt,
    interrupted_choice,
    make_approver,
    show_sandbox,
)
from xclaw.cli.options import (
    ApprovalOption,
    ProjectOption,
    SandboxOption,
    TraceChoice,
)
from xclaw.cli.render import LiveView, print_summary
from xclaw.cli.web import attach_web_relay, browser_flags, saved_web_base_url
from xclaw.core.errors import ConfigError, XclawError
from xclaw.core.events import EventBus
from xclaw.core.extras import require
from xclaw.core.resume import InterruptedChoice
from xclaw.core.state import RunControl, RunResult

if TYPE_CHECKING:
    from xclaw.browser.session import BrowserPool, BrowserSession
    from xclaw.coding.agent import Agent
    from xclaw.compose.coding import CodingRuntime
    from xclaw.compose.settings import Overrides
    from xclaw.config import XclawConfig
    from xclaw.store.base import SessionRecord

EXIT_CODES = {"completed": 0, "failed": 1, "interrupted": 3}


def _ask_keep(processes: list[dict[str, Any]]) -> bool:
    if not sys.stdin.isatty():
        return False
    names = ", ".join(
        f"{p['processId']} {' '.join(p.get('detectedUrls') or [])}" for p in processes
    )
    return Confirm.ask(f"Keep running processes ({names})?", default=False, console=console)


async def _drive(
    runtime: CodingRuntime, start: Callable[[RunControl], Awaitable[RunResult]]
) -> RunResult:
    control = RunControl()
    remove = install_interrupt(control)
    try:
        async with runtime:  # plugin services, memory, the browser: as long as the run
            return await runtime.drive(start, control)
    finally:
        remove()


def _warn(line: str) -> None:  # a failed plugin or MCP server is off; the run goes on
    err_console.print(f"[yellow]warning:[/] {escape(line)}")


def browser_session(headed: bool) -> BrowserSession:
    """The session's browser for ``--browser``: launched on first use, headless unless
    ``headed``; ``XCLAW_BROWSER`` / ``--browser-path`` and ``XCLAW_BROWSER_ARGS`` apply."""
    require("browser", "--browser (the agent's browser tools)")
    from xclaw.browser import BrowserOptions
    from xclaw.browser.session import BrowserPool, BrowserSession

    extra = tuple(shlex.split(os.environ.get("XCLAW_BROWSER_ARGS", "")))
    pool: BrowserPool = BrowserPool(BrowserOptions(headless=not headed, args=extra))
    return BrowserSession(pool)


HeadlessOption = Annotated[
    bool, typer.Option("--headless", help="Run the model's browser without a window.")
]
BrowserOption = Annotated[
    str | None,
    typer.Option(
        "--browser-path", help="Chromium/Chrome to use (chatgpt-web and --browser tools)."
    ),
]
BrowserToolsOption = Annotated[
    bool,
    typer.Option(
        "--browser",
        help="Give the agent browser tools (browser.navigate, browser.content, ...) on a "
        "headless Chromium of its own for this session.",
    ),
]
BrowserHeadedOption = Annotated[
    bool, typer.Option("--browser-headed", help="With --browser: show the browser window.")
]


def _build(config: XclawConfig, directory: Path, overrides: Overrides) -> CodingRuntime:
    """The runtime of ``xclaw run``/``resume``: the builder's, with the live view, a console
    approver and the keep-processes question; the sandbox choice is shown."""
    from xclaw.compose.coding import Surface, build_coding
    from xclaw.compose.sandbox import plan_sandbox
    from xclaw.compose.settings import approval_mode

    bus = EventBus()
    bus.subscribe(LiveView(console))
    surface = Surface(
        approver=make_approver(approval_mode(config, overrides)),
        bus=bus,
        keep_processes=_ask_keep,
        warn=_warn,
    )
    plan = plan_sandbox(config, overrides.sandbox)
    show_sandbox(plan)
    runtime = build_coding(config, directory, overrides, surface=surface, sandbox=plan)
    attach_web_relay(runtime.agent.model, bus)
    return runtime


TraceOption = Annotated[
    TraceChoice | None,
    typer.Option(
        "--trace",
        help="Print the run's OpenTelemetry spans on stderr: console (readable) or json "
        "(one span a line). OTLP export is configured under observability in xclaw.yaml.",
    ),
]


def _finish(result: RunResult, agent: Agent) -> None:
    print_summary(console, result, agent.model)
    if result.status != "completed":
        console.print(f"[dim]continue with: xclaw resume {result.session_id}[/]")
    raise typer.Exit(EXIT_CODES[result.status])


def run(
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    directory: ProjectOption = Path("."),
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    approval: ApprovalOption = None,
    sandbox: SandboxOption = None,
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1)] = None,
    headless: HeadlessOption = False,
    browser_path: BrowserOption = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="Endpoint of an OpenAI- or Anthropic-compatible gateway."),
    ] = None,
    browser: BrowserToolsOption = False,
    browser_headed: BrowserHeadedOption = False,
    trace: TraceOption = None,
    protocol: ProtocolOption = None,
    memory: Annotated[
        bool,
        typer.Option(
            "--memory",
            help="Long-term memory for this run: recalled memories in the prompt, memory.* "
            "tools, facts extracted when it completes (see `xclaw memory`).",
        ),
    ] = False,
) -> None:
    """Run the coding agent on a project (recorded as a session you can resume)."""
    from xclaw.compose.settings import Overrides, resolve_config  # the config: on use

    session = browser_session(browser_headed) if browser else None
    try:
        browser_flags(headless, browser_path)
        config = resolve_config(directory)
        flags = Overrides(
            model=model,
            base_url=base_url,
            protocol=protocol,
            approval=approval,
            sandbox=sandbox,
            max_turns=max_turns,
            memory=memory,
            browser=session,
            trace=trace,
        )
        runtime = _build(config, directory, flags)
    except XclawError as err:
        fail(err)
    agent = runtime.agent
    result = asyncio.run(_drive(runtime, lambda control: agent.run(task, control=control)))
    _finish(result, agent)


def _session_to_resume(
    session_id: str | None, directory: Path, config: XclawConfig
) -> SessionRecord:
    from xclaw.compose.coding import open_configured_store

    store = open_configured_store(config)
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
        hint="Pass a session id (see `xclaw sessions`), or the project with -C/--project.",
    )


def resume(
    session_id: Annotated[
        str | None,
        typer.Argument(
            help="Session id (see `xclaw sessions`); default: the latest unfinished "
            "session of the -C project."
        ),
    ] = None,
    directory: ProjectOption = Path("."),
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    approval: ApprovalOption = None,
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
    sandbox: SandboxOption = None,
    headless: HeadlessOption = False,
    browser_path: BrowserOption = None,
    browser: BrowserToolsOption = False,
    browser_headed: BrowserHeadedOption = False,
    trace: TraceOption = None,
    protocol: ProtocolOption = None,
) -> None:
    """Continue a session after a crash, a stop or a pause, without redoing side effects."""
    from xclaw.compose.settings import Overrides, resolve_config  # the config: on use

    try:
        if retry_interrupted and skip_interrupted:
            raise ConfigError("Choose one of --retry-interrupted and --skip-interrupted.")
        session = _session_to_resume(session_id, directory, resolve_config(directory))
        if (session.meta.get("agents") or {}).get("orchestrator") or session.parent_session_id:
            # A multi-agent tree resumes from its orchestrator: finished children stay done.
            from xclaw.cli.agents_cmd import resume_orchestrator

            resume_orchestrator(
                session,
                model=model,
                approval=approval,
                retry_interrupted=retry_interrupted,
                skip_interrupted=skip_interrupted,
                max_turns=max_turns,
                sandbox=sandbox,
            )
            return
        spec = model or session.meta.get("model_spec")
        browser_flags(headless, browser_path)
        base_url = base_url or saved_web_base_url(spec, session.meta)
        tabs = browser_session(browser_headed) if browser else None
        saved = session.meta.get("protocol")
        project = Path(session.root)
        flags = Overrides(
            model=spec,
            base_url=base_url,
            protocol=protocol or (saved if isinstance(saved, str) else None),
            approval=approval,
            sandbox=sandbox,
            max_turns=max_turns,
            browser=tabs,
            trace=trace,
        )
        runtime = _build(resolve_config(project), project, flags)
    except XclawError as err:
        fail(err)
    choice: InterruptedChoice | None = interrupted_choice(
        retry_interrupted, skip_interrupted, approval, None
    )
    agent = runtime.agent
    try:
        result = asyncio.run(
            _drive(
                runtime,
                lambda control: agent.resume(
                    session.id, control=control, interrupted=choice, fresh_context=fresh
                ),
            )
        )
    except XclawError as err:  # the session cannot be resumed (finished, other root, ...)
        fail(err)
    _finish(result, agent)
