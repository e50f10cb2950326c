"""``xclaw agents``: multi-agent runs — an orchestrator delegating to workers.

    xclaw agents run "task" [-C PROJECT] [--worker-model coder=SPEC] [--concurrency N]
                     [--budget-tokens N] [--budget-usd X] [--budget-seconds S]
                     [--team NAME] [--channel C --peer P]
    xclaw agents resume ID [--retry-interrupted | --skip-interrupted]
    xclaw agents workers [-C PROJECT]

Workers come from the built-in roles and ``agents.workers`` in xclaw.yaml; each child is a
durable session of its own, shown under its parent by ``xclaw sessions`` and ``xclaw steps``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from xclaw.cli.approve import ConsoleApprover
from xclaw.cli.common import (
    ProtocolOption,
    console,
    fail,
    install_interrupt,
    interrupted_choice,
    make_approver,
    sandbox_factory,
)
from xclaw.cli.options import ApprovalOption, ProjectOption, SandboxOption, shown_state
from xclaw.core.errors import ConfigError, XclawError
from xclaw.core.events import EventBus
from xclaw.core.state import RunControl, RunResult
from xclaw.redact import redact

if TYPE_CHECKING:
    from xclaw.agents.interrupted import ResumeChoice
    from xclaw.agents.team import Orchestrator
    from xclaw.store.base import SessionRecord, Store

app = typer.Typer(
    help="Multi-agent runs: an orchestrator delegating to workers.", no_args_is_help=True
)

EXIT_CODES = {"completed": 0, "failed": 1, "interrupted": 3}


def _effective_approval(flag: str | None, configured: str | None) -> str:
    """The parent's mode as make_approver applies it (ask without a terminal is deny)."""
    chosen = flag or configured or ("ask" if sys.stdin.isatty() else "deny")
    if chosen not in ("ask", "deny", "allow"):
        raise typer.BadParameter(f"unknown approval mode {chosen!r}; use ask, deny or allow")
    return "deny" if chosen == "ask" and not sys.stdin.isatty() else chosen


def _worker_models(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, spec = pair.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise ConfigError(
                f"--worker-model {pair!r} is not NAME=SPEC.",
                hint="For example --worker-model reviewer=openai:gpt-4.1-mini.",
            )
        out[name.strip()] = spec.strip()
    return out


def _orchestrator(
    directory: Path,
    spec: str | None,
    approval: str | None,
    *,
    sandbox: str | None = None,
    max_turns: int | None = None,
    settings_meta: dict[str, Any] | None = None,
    worker_models: dict[str, str] | None = None,
    concurrency: int | None = None,
    budget: dict[str, Any] | None = None,
    team: str | None = None,
    protocol: str | None = None,
) -> tuple[Orchestrator, Any]:
    from xclaw.cli.render import LiveView
    from xclaw.compose.agents import TeamOverrides, build_orchestrator
    from xclaw.compose.settings import Overrides, resolve_config

    cfg = resolve_config(directory)  # once: the orchestrator and every worker follow it
    bus = EventBus()
    bus.subscribe(LiveView(console))
    orchestrator, agents_cfg = build_orchestrator(
        cfg,
        directory,
        Overrides(
            model=spec, protocol=protocol, approval=approval, sandbox=sandbox, max_turns=max_turns
        ),
        _effective_approval(approval, cfg.approval),
        team=TeamOverrides(
            worker_models=worker_models or {},
            concurrency=concurrency,
            budget=budget or {},
            team=team,
            saved=settings_meta,
        ),
        approver_for=make_approver,
        bus=bus,
        sandbox=sandbox_factory(sandbox, cfg),
    )
    return orchestrator, agents_cfg


async def _drive(
    orchestrator: Orchestrator, start: Callable[[RunControl], Awaitable[RunResult]]
) -> RunResult:
    control = RunControl()
    remove = install_interrupt(control)
    try:
        return await start(control)
    finally:
        remove()
        await orchestrator.model.aclose()


def _finish(result: RunResult, orchestrator: Orchestrator) -> None:
    from xclaw.cli.render import print_summary

    print_summary(console, result, orchestrator.model)
    children = orchestrator.store.list_children(result.session_id)
    if children:
        table = Table("child", "worker", "state", "task")
        for child in children:
            worker = str((child.meta.get("agents") or {}).get("worker", ""))
            task = escape(redact(child.title or child.task)[:50])
            table.add_row(child.id, worker, shown_state(child.state), task)
        console.print(table)
    if result.reason.startswith("CHILD_PAUSED"):
        from xclaw.agents.interrupted import decide_commands

        skip, retry = decide_commands(result.session_id)
        console.print(f"decide with: {skip}\n         or: {retry}")
    elif result.status != "completed":
        console.print(f"[dim]continue with: xclaw agents resume {result.session_id}[/]")
    raise typer.Exit(EXIT_CODES[result.status])


@app.command("run")
def run(
    task: Annotated[str, typer.Argument(help="What the team should do.")],
    directory: ProjectOption = Path("."),
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    approval: ApprovalOption = None,
    sandbox: SandboxOption = None,
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1)] = None,
    worker_model: Annotated[
        list[str] | None,
        typer.Option("--worker-model", help="NAME=SPEC: a worker's model (repeatable)."),
    ] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, max=32)] = None,
    budget_tokens: Annotated[int | None, typer.Option("--budget-tokens", min=1)] = None,
    budget_usd: Annotated[float | None, typer.Option("--budget-usd", min=0.0001)] = None,
    budget_seconds: Annotated[float | None, typer.Option("--budget-seconds", min=1)] = None,
    team: Annotated[str | None, typer.Option("--team", help="Only this team's workers.")] = None,
    channel: Annotated[str | None, typer.Option("--channel", help="For routing rules.")] = None,
    peer: Annotated[str | None, typer.Option("--peer", help="For routing rules.")] = None,
    protocol: ProtocolOption = None,
) -> None:
    """Run the orchestrator on a task: it delegates to workers (a durable session tree)."""
    try:
        directory = directory.resolve()
        orchestrator, agents_cfg = _orchestrator(
            directory,
            model,
            approval,
            sandbox=sandbox,
            max_turns=max_turns,
            worker_models=_worker_models(worker_model or []),
            concurrency=concurrency,
            budget={
                "max_tokens": budget_tokens,
                "max_usd": budget_usd,
                "max_seconds": budget_seconds,
            },
            team=team,
            protocol=protocol,
        )
        routed = team is None and bool(
            agents_cfg.routes or agents_cfg.intent_router or channel or peer
        )
        router = _router(orchestrator, agents_cfg) if routed else None
    except XclawError as err:
        fail(err)

    async def start(control: RunControl) -> RunResult:
        if router is None:
            return await orchestrator.run(task, control=control)
        from xclaw.agents.team import run_routed

        route, result = await run_routed(
            orchestrator, router, task, channel=channel, peer=peer, control=control
        )
        console.print(f"[dim]route: {route.kind} {route.target or ''} ({route.detail})[/]")
        return result

    _finish(asyncio.run(_drive(orchestrator, start)), orchestrator)


def _router(orchestrator: Orchestrator, agents_cfg: Any) -> Any:
    from xclaw.agents.routing import Router

    return Router(
        orchestrator.registry,
        rules=agents_cfg.routes,
        teams=agents_cfg.teams,
        intent_model=orchestrator.model if agents_cfg.intent_router else None,
    )


def resume_orchestrator(
    session: SessionRecord,
    *,
    model: str | None = None,
    approval: str | None = None,
    retry_interrupted: bool = False,
    skip_interrupted: bool = False,
    max_turns: int | None = None,
    sandbox: str | None = None,
) -> None:
    """Resume an orchestrator session: the unfinished child continues, finished children are
    not run again, then the orchestrator goes on. (``xclaw resume`` can call this for a
    session whose meta says ``agents.orchestrator``.)"""
    try:
        if retry_interrupted and skip_interrupted:
            raise ConfigError("Choose one of --retry-interrupted and --skip-interrupted.")
        session = _tree_root(session)
        orchestrator, agents_cfg = _orchestrator(
            Path(session.root),
            model or session.meta.get("model_spec"),
            approval,
            sandbox=sandbox,
            max_turns=max_turns,
            settings_meta=session.meta,
        )
    except XclawError as err:
        fail(err)
    # Cut-off calls of children: the flag, else a terminal asks, else agents.on_interrupted.
    choice: ResumeChoice = interrupted_choice(
        retry_interrupted, skip_interrupted, approval, agents_cfg.on_interrupted
    )
    asker = ConsoleApprover(console) if choice == "ask" else None
    try:
        result = asyncio.run(
            _drive(
                orchestrator,
                lambda control: orchestrator.resume(
                    session.id, control=control, interrupted=choice, asker=asker
                ),
            )
        )
    except XclawError as err:
        fail(err)
    _finish(result, orchestrator)


def _tree_root(session: SessionRecord) -> SessionRecord:
    """A child is resumed through its parent (which resumes it, then goes on)."""
    if session.parent_session_id is None:
        return session
    store = _store()
    original, seen = session.id, {session.id}
    while session.parent_session_id is not None:
        parent = store.get_session(session.parent_session_id)
        if parent is None or parent.id in seen:
            raise ConfigError(
                f"Session {session.id} is a child of {session.parent_session_id}, which is gone.",
                code="SESSION_NOT_FOUND",
                hint="A child runs only under its orchestrator; start a new run.",
            )
        seen.add(parent.id)
        session = parent
    console.print(f"[dim]{escape(original)} is a child: resuming its orchestrator {session.id}[/]")
    return session


def _store() -> Store:
    from xclaw.store.open import open_store

    return open_store()


@app.command("resume")
def resume(
    session_id: Annotated[str, typer.Argument(help="The orchestrator's session id.")],
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    approval: ApprovalOption = None,
    retry_interrupted: Annotated[
        bool, typer.Option("--retry-interrupted", help="Run an interrupted call again.")
    ] = False,
    skip_interrupted: Annotated[
        bool, typer.Option("--skip-interrupted", help="Do not run an interrupted call again.")
    ] = False,
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1)] = None,
    sandbox: SandboxOption = None,
) -> None:
    """Continue an orchestrator session after a crash or a stop, children included."""
    session = _store().get_session(session_id)
    if session is None:
        fail(
            ConfigError(
                f"There is no session {session_id!r}.",
                code="SESSION_NOT_FOUND",
                hint="List sessions with `xclaw sessions`.",
            )
        )
    resume_orchestrator(
        session,
        model=model,
        approval=approval,
        retry_interrupted=retry_interrupted,
        skip_interrupted=skip_interrupted,
        max_turns=max_turns,
        sandbox=sandbox,
    )


@app.command("workers")
def workers(
    directory: ProjectOption = Path("."),
    approval: ApprovalOption = None,
) -> None:
    """The workers an orchestrator of this project can use."""
    from xclaw.agents.config import load_agents_config
    from xclaw.agents.registry import build_registry
    from xclaw.compose.coding import coding_tools
    from xclaw.compose.settings import resolve_config

    try:
        cfg = resolve_config(directory.resolve())  # once: the workers, tools and approval
        registry = build_registry(
            load_agents_config(cfg),
            known_tools=[t.name for t in coding_tools(cfg)],
            parent_approval=_effective_approval(approval, cfg.approval),  # type: ignore[arg-type]
        )
    except XclawError as err:
        fail(err)
    table = Table("worker", "workspace", "model", "turns", "time", "approval", "tools")
    for w in registry:
        table.add_row(
            w.name,
            w.workspace,
            w.model or "(orchestrator's)",
            str(w.max_turns),
            f"{w.time_limit_s:g}s",
            w.approval or "(parent's)",
            ", ".join(w.tools),
        )
    console.print(table)


if __name__ == "__main__":  # `python -m xclaw.cli.agents_cmd` until app.py registers it
    app()
