"""``xclaw chronos``: scheduled and webhook-driven unattended runs (seed 003 ch. 11).

``run`` is the scheduler in the foreground (SIGTERM/Ctrl+C: running jobs get
``chronos.stop_timeout_s`` to finish, then are checkpointed and resumed at the next start);
``xclaw serve`` runs the same scheduler inside the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import os
import signal
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from xclaw.cli.common import ProtocolOption, console, fail
from xclaw.cli.options import ProjectOption
from xclaw.core import extras
from xclaw.core.errors import ConfigError, XclawError
from xclaw.redact import redact

if TYPE_CHECKING:
    from xclaw.chronos.notify import TextSender
    from xclaw.chronos.service import ChronosService
    from xclaw.chronos.store import ChronosStore
    from xclaw.compose.sandbox import SandboxPlan
    from xclaw.config import XclawConfig
    from xclaw.core.events import Event
    from xclaw.sandbox import Backend
    from xclaw.store.base import Store

__all__ = ["app", "build_service"]

app = typer.Typer(help="Scheduled jobs, webhooks and notifications (unattended runs).")

Directory = ProjectOption  # -C/--project, as on every command


def build_service(
    root: Path,
    store: Store,
    *,
    config: XclawConfig | None = None,
    channels: Mapping[str, TextSender] | None = None,
    model: str | None = None,
    sandbox: str | SandboxPlan | None = None,
    require: bool = False,
    protocol: str | None = None,
) -> ChronosService | None:
    """The chronos service of ``xclaw serve`` / ``xclaw chronos run``; None when nothing is
    configured (unless ``require``). ``config``: the command's resolved configuration (read
    here when the command has none); ``sandbox``: ``--sandbox`` or the gateway's plan."""
    from xclaw.compose.settings import resolve_config
    from xclaw.models.presets import load_dotenv

    cfg = config if config is not None else resolve_config(root)
    if model:  # --model: the default of every job that names none
        cfg = cfg.model_copy(update={"model": model})
    section = cfg.chronos
    if not (section.jobs or section.hooks or section.subscriptions) and not require:
        return None
    extras.require("gateway", "the chronos service (jobs, webhooks)", ["fastapi", "uvicorn"])
    from xclaw.chronos.service import ChronosService, ServiceOptions
    from xclaw.chronos.store import open_chronos_store

    env = {**load_dotenv(root / ".env"), **os.environ}
    chosen: list[SandboxPlan] = [] if sandbox is None or isinstance(sandbox, str) else [sandbox]

    def sandbox_for_run() -> Backend:  # chosen at the first run, not for `list` or `pause`
        from xclaw.cli.common import sandbox_factory

        if not chosen:
            chosen.append(sandbox_factory(sandbox if isinstance(sandbox, str) else None, cfg))
        return chosen[0]()

    options = ServiceOptions(
        channels=dict(channels or {}), sandbox=sandbox_for_run, protocol=protocol
    )
    return ChronosService(
        cfg, root, env, store=store, chronos_store=open_chronos_store(), options=options
    )


def _chronos_store() -> ChronosStore:
    from xclaw.chronos.store import open_chronos_store

    return open_chronos_store()


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def _service(
    directory: Path, model: str | None = None, protocol: str | None = None
) -> ChronosService:
    from xclaw.compose.coding import open_configured_store
    from xclaw.compose.settings import resolve_config

    root = directory.expanduser().resolve()
    config = resolve_config(root)  # once: the store and the service follow it
    service = build_service(
        root, open_configured_store(config), config=config, model=model, protocol=protocol
    )
    if service is None:
        raise ConfigError(
            "No chronos jobs, hooks or subscriptions are configured.",
            code="CHRONOS_NOT_CONFIGURED",
            hint="Add a chronos: section to ~/.config/xclaw/xclaw.yaml (see the README).",
        )
    return service


@app.command("list")
def list_jobs(directory: Directory = Path(".")) -> None:
    """The configured jobs: schedule, next fire, last fire, paused."""
    try:
        service = _service(directory)
    except XclawError as err:
        fail(err)
    table = Table("id", "schedule", "timezone", "next fire", "last fire", "state", "missed")
    now = service.clock.now()
    for job in service.jobs:
        paused = service.chronos_store.is_paused(job.id)
        state = "disabled" if not job.enabled else "paused" if paused else "active"
        table.add_row(
            escape(job.id),
            escape(job.schedule.expression),
            str(job.schedule.tz),
            _when(job.schedule.next_after(now).timestamp()) if job.enabled else "-",
            _when(service.chronos_store.last_fire(job.id)),
            state,
            job.missed,
        )
    console.print(table)
    for name in sorted(service.hooks):
        console.print(f"webhook: POST /hooks/{escape(name)} ({service.hooks[name].auth})")


@app.command()
def history(
    job: Annotated[str | None, typer.Argument(help="Only this job (or hook:NAME).")] = None,
    limit: Annotated[int, typer.Option(min=1)] = 30,
) -> None:
    """Recent fires and runs, newest first."""
    table = Table("fire", "job", "trigger", "status", "session", "reason / reply")
    for rec in _chronos_store().history(job, limit):
        note = rec.reason or rec.reply
        table.add_row(
            _when(rec.fire_at),
            escape(rec.job_id),
            escape(rec.source),
            rec.status,
            escape(rec.session_id or "-"),
            escape(redact(note.replace("\n", " ")[:120])),
        )
    console.print(table)


def _known_job(directory: Path, job: str) -> None:
    try:
        service = _service(directory)
    except XclawError as err:
        fail(err)
    if job not in {j.id for j in service.jobs}:
        fail(ConfigError(f"There is no chronos job {job!r}.", code="CHRONOS_JOB_NOT_FOUND"))


@app.command()
def pause(job: str, directory: Directory = Path(".")) -> None:
    """Pause a job: its fires are skipped (and recorded) until it is unpaused."""
    _known_job(directory, job)
    _chronos_store().set_paused(job, True)
    console.print(f"{escape(job)} paused")


@app.command()
def unpause(job: str, directory: Directory = Path(".")) -> None:
    """Unpause a job from its next fire (fires while paused are not made up)."""
    _known_job(directory, job)
    _chronos_store().set_paused(job, False)
    console.print(f"{escape(job)} unpaused")


# `resume` is a session's word (`xclaw resume` continues one): the old name of `unpause` says
# so, whatever it is given, instead of "No such command", and changes nothing.
@app.command(
    "resume",
    hidden=True,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
def renamed_resume() -> None:
    """Renamed: use `xclaw chronos unpause JOB` (`xclaw resume` continues a session)."""
    fail(
        ConfigError(
            "`xclaw chronos resume` was renamed `xclaw chronos unpause`.",
            code="COMMAND_RENAMED",
            hint="Run `xclaw chronos unpause JOB`; `xclaw resume` continues a session.",
        )
    )


@app.command("run-now")
def run_now(
    job: str,
    directory: Directory = Path("."),
    model: Annotated[str | None, typer.Option("--model", "-m")] = None,
    protocol: ProtocolOption = None,
) -> None:
    """Run one job now, in the foreground, outside its schedule."""
    try:
        service = _service(directory, model, protocol)
    except XclawError as err:
        fail(err)
    if job not in service.engine.jobs:
        fail(ConfigError(f"There is no chronos job {job!r}.", code="CHRONOS_JOB_NOT_FOUND"))

    async def once() -> None:
        _print_events(service)
        service.engine.fire_now(job)
        await service.engine.wait_idle()
        await service.subscriptions.drain()
        await service.http.aclose()

    asyncio.run(once())
    latest = service.chronos_store.history(job, 1)
    if latest and latest[0].status not in ("completed",):
        raise typer.Exit(1)


@app.command("dead-letters")
def dead_letters(limit: Annotated[int, typer.Option(min=1)] = 30) -> None:
    """Notifications that could not be delivered (after every retry)."""
    from xclaw.chronos.notify import DeadLetterLog
    from xclaw.chronos.service import dead_letter_path

    path = dead_letter_path()
    items = DeadLetterLog(path).read()[-limit:]
    if not items:
        console.print(f"no dead letters ({escape(str(path))})")
        return
    table = Table("at", "target", "source", "level", "title", "attempts", "error")
    for item in reversed(items):
        table.add_row(
            _when(float(item.get("at", 0))),
            escape(str(item.get("target", ""))),
            escape(str(item.get("source", ""))),
            escape(str(item.get("level", ""))),
            escape(str(item.get("title", ""))[:60]),
            str(item.get("attempts", "")),
            escape(str(item.get("error", ""))[:80]),
        )
    console.print(table)


@app.command("run")
def run_scheduler(
    directory: Directory = Path("."),
    model: Annotated[str | None, typer.Option("--model", "-m", help="Default model.")] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="Also serve /hooks/<name> on 127.0.0.1:PORT.")
    ] = None,
    protocol: ProtocolOption = None,
) -> None:
    """Run the scheduler in the foreground until SIGTERM or Ctrl+C."""
    try:
        service = _service(directory, model, protocol)
    except XclawError as err:
        fail(err)
    _log_to_stderr()
    try:
        asyncio.run(_foreground(service, port))
    except XclawError as err:
        fail(err)
    console.print("chronos stopped")


async def _foreground(service: ChronosService, port: int | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    _print_events(service)
    served = None
    if port is not None:
        served = await _serve_hooks(service, port)
    else:
        await service.start()
    console.print(f"chronos: {len(service.jobs)} job(s) scheduled; SIGTERM or Ctrl+C stops.")
    await stop.wait()
    console.print(f"chronos: stopping (up to {service.config.stop_timeout_s:g}s for running jobs)")
    if served is not None:
        server, task = served
        server.should_exit = True
        await task
    else:
        await service.stop()


async def _serve_hooks(service: ChronosService, port: int) -> Any:
    import uvicorn
    from fastapi import FastAPI

    from xclaw.gateway.auth import install_log_redaction

    class QuietServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # our handlers stop it; uvicorn's would re-raise SIGTERM after shutdown

    install_log_redaction()
    web = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    web.include_router(service.router)  # its lifespan starts and stops the scheduler
    config = uvicorn.Config(
        web, host="127.0.0.1", port=port, log_config=None, http="h11", server_header=False
    )
    server = QuietServer(config)
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn offers no started event
        if task.done():
            await task  # raises why it could not start
            raise ConfigError(f"Cannot serve webhooks on port {port}.")
        await asyncio.sleep(0.02)
    return server, task


def _print_events(service: ChronosService) -> None:
    shown = {
        "chronos.fired",
        "chronos.skipped",
        "chronos.finished",
        "chronos.failed",
        "approval.denied",
        "webhook.received",
        "notify.failed",
    }

    def show(event: Event) -> None:
        if event.type not in shown:
            return
        detail = {k: v for k, v in event.payload.items() if k not in ("reply",)}
        line = f"{event.type} {event.session_id} {json.dumps(detail, default=str)}"
        console.print(escape(redact(line)), soft_wrap=True)
        sys.stdout.flush()

    service.bus.subscribe(show)


def _log_to_stderr() -> None:
    from xclaw.gateway.auth import RedactingFilter

    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactingFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
