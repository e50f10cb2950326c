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
from dataclasses import replace
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
    make_approver,
    sandbox_factory,
)
from xclaw.cli.render import LiveView, print_summary
from xclaw.cli.web import attach_web_relay, browser_flags, saved_web_base_url
from xclaw.config import load_config
from xclaw.core.errors import ConfigError, XclawError
from xclaw.core.events import EventBus
from xclaw.core.resume import InterruptedChoice
from xclaw.core.state import RunControl, RunResult

if TYPE_CHECKING:
    from xclaw.browser.session import BrowserPool, BrowserSession
    from xclaw.coding.agent import Agent
    from xclaw.memory.runtime import MemoryRuntime
    from xclaw.obs.tracing import Tracing
    from xclaw.plugins.extensions import Extensions
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
    agent: Agent,
    start: Callable[[RunControl], Awaitable[RunResult]],
    browser: BrowserSession | None = None,
    extensions: Extensions | None = None,
    memory: MemoryRuntime | None = None,
) -> RunResult:
    from xclaw.mcp.runtime import with_mcp_tools  # MCP servers: listed, then always stopped

    start = with_mcp_tools(start, agent.registry, agent.workdir, load_config(agent.workdir).mcp)
    control = RunControl()
    remove = install_interrupt(control)
    try:
        if extensions is None:
            return await start(control)
        async with extensions:  # plugin services run as long as the run does
            _warn_plugins(extensions)
            return await start(control)
    finally:
        remove()
        if memory is not None:  # facts still being extracted get their timeout, then close
            await memory.drain(memory.config.extract.timeout_s)
            memory.close()
        if browser is not None:  # the session's context (cookies, storage), then Chromium
            await browser.close()
            await browser.pool.close()
        await agent.model.aclose()


def _warn_plugins(extensions: Extensions) -> None:
    for line in extensions.problems():  # a failed plugin is off; the run goes on without it
        err_console.print(f"[yellow]warning:[/] {escape(line)}")


def browser_session(headed: bool) -> BrowserSession:
    """The session's browser for ``--browser``: launched on first use, headless unless
    ``headed``; ``XCLAW_BROWSER`` / ``--browser-path`` and ``XCLAW_BROWSER_ARGS`` apply."""
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


def _build_agent(
    directory: Path,
    spec: str | None,
    approval: str | None,
    max_turns: int | None,
    base_url: str | None = None,
    sandbox: str | None = None,
    browser: BrowserSession | None = None,
    memory: bool = False,
    protocol: str | None = None,
) -> tuple[Agent, Extensions, MemoryRuntime | None]:
    from xclaw.coding.agent import Agent  # heavy: imported when a command runs, not for --help
    from xclaw.coding.prompt import SYSTEM_PROMPT
    from xclaw.coding.toolset import coding_registry
    from xclaw.models.resolve import resolve_model
    from xclaw.plugins.extensions import load_extensions
    from xclaw.store.open import open_store

    cfg = load_config(directory)
    chosen = spec or cfg.model
    model = resolve_model(
        chosen, base_url=base_url, project=directory, protocol=protocol, model_settings=cfg.models
    )
    limits = cfg.limits.to_limits()
    if max_turns is not None:
        limits = replace(limits, max_turns=max_turns)
    bus = EventBus()
    bus.subscribe(LiveView(console))
    attach_web_relay(model, bus)
    factory = sandbox_factory(sandbox, cfg)
    tools = coding_registry(browser, allow_hosts=cfg.browsing.allow_hosts) if browser else None
    ext = load_extensions(directory.resolve(), tools)  # enabled plugins + skills
    hooks, reserve, remembered = ext.hooks, 0, None
    if memory:  # recall before each model call, memory.* tools, facts extracted at the end
        from xclaw.memory.runtime import default_scopes, open_memory

        remembered = open_memory(cfg, default_scopes(directory), model=model)
        for t in remembered.tools():
            ext.registry.register(t)
        hooks, reserve = hooks.merged(remembered.hooks()), remembered.reserve_tokens
    agent = Agent(
        model,
        directory,
        ext.registry,
        hooks=hooks,
        prompt_reserve=reserve,
        system_prompt=ext.system_prompt(SYSTEM_PROMPT),
        approval=make_approver(approval or cfg.approval),
        limits=limits,
        bus=bus,
        keep_processes=_ask_keep,
        store=open_store(),
        model_spec=chosen,
        model_protocol=protocol,
        sandbox=factory,
    )
    return agent, ext, remembered


TraceOption = Annotated[
    str | None,
    typer.Option(
        "--trace",
        help="Print the run's OpenTelemetry spans on stderr: console (readable) or json "
        "(one span a line). OTLP export is configured under observability in xclaw.yaml.",
    ),
]


def _tracing(agent: Agent, directory: Path, local: str | None) -> Tracing | None:
    """Spans of ``agent``'s runs when ``--trace`` or the user's ``observability`` asks."""
    from xclaw.obs.tracing import Tracing

    if local not in (None, "console", "json"):
        raise ConfigError(f"Unknown --trace {local!r}.", hint="Use --trace console or json.")
    cfg = load_config(directory).observability
    tracing = Tracing.from_config(cfg, "json" if local == "json" else "console" if local else None)
    if tracing is not None:
        tracing.attach(agent)
    return tracing


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
    session = browser_session(browser_headed) if browser else None
    try:
        browser_flags(headless, browser_path)
        agent, ext, remembered = _build_agent(
            directory, model, approval, max_turns, base_url, sandbox, session, memory, protocol
        )
        tracing = _tracing(agent, directory, trace)
    except XclawError as err:
        fail(err)
    try:
        result = asyncio.run(
            _drive(
                agent, lambda control: agent.run(task, control=control), session, ext, remembered
            )
        )
    finally:
        if tracing is not None:
            tracing.shutdown()  # flushes the spans before the process exits
    _finish(result, agent)


def _session_to_resume(session_id: str | None, directory: Path) -> SessionRecord:
    from xclaw.store.open import open_store

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
    browser_path: BrowserOption = None,
    browser: BrowserToolsOption = False,
    browser_headed: BrowserHeadedOption = False,
    trace: TraceOption = None,
    protocol: ProtocolOption = None,
) -> None:
    """Continue a session after a crash, a stop or a pause, without redoing side effects."""
    try:
        if retry_interrupted and skip_interrupted:
            raise ConfigError("Choose one of --retry-interrupted and --skip-interrupted.")
        session = _session_to_resume(session_id, directory)
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
        agent, ext, _ = _build_agent(
            Path(session.root),
            spec,
            approval,
            max_turns,
            base_url,
            sandbox,
            tabs,
            protocol=protocol or (saved if isinstance(saved, str) else None),
        )
        tracing = _tracing(agent, Path(session.root), trace)
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
                tabs,
                ext,
            )
        )
    except XclawError as err:  # the session cannot be resumed (finished, other root, ...)
        fail(err)
    finally:
        if tracing is not None:
            tracing.shutdown()
    _finish(result, agent)
